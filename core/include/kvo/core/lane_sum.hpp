// A sum in a fixed order that vectorises: element t goes to lane t % 8 (each lane in index order),
// then the lanes are added pairwise. The same sequence gives the same bits whether it is read
// contiguously or through an index list, so the replay engine and the scorer's CPU twin, which
// hold the same probabilities in different layouts, normalise them identically.
#pragma once
#include <cstddef>

namespace kvo {

// sum_{t < n} at(t) in the lane order above; `at` is called once per t, in index order per lane.
template <typename At>
double lane_sum(std::size_t n, At at) {
  constexpr std::size_t kLanes = 8;
  double acc[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t t = 0;
  for (; t + kLanes <= n; t += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) acc[l] += at(t + l);
  for (std::size_t l = 0; t < n; ++t, ++l) acc[l] += at(t);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace kvo
