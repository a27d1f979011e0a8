// Internal: the positions of the k largest weights of a row (the earlier position wins a tie),
// sorted, for the checks that compare which tokens two rules keep.
#pragma once
#include <algorithm>
#include <numeric>
#include <span>
#include <vector>

namespace kvo::detail {

inline std::vector<int> top_k_positions(std::span<const double> w, int k) {
  std::vector<int> idx(w.size());
  std::iota(idx.begin(), idx.end(), 0);
  const auto kk = static_cast<long>(std::clamp<size_t>(static_cast<size_t>(std::max(k, 0)), 0, w.size()));
  auto heavier = [&](int a, int b) {
    const double x = w[static_cast<size_t>(a)], y = w[static_cast<size_t>(b)];
    return x != y ? x > y : a < b;
  };
  std::nth_element(idx.begin(), idx.begin() + kk, idx.end(), heavier);
  idx.resize(static_cast<size_t>(kk));
  std::sort(idx.begin(), idx.end());
  return idx;
}

template <class W>
double mass_of(const W& w, const std::vector<int>& set) {
  double s = 0.0;
  for (int j : set) s += w[static_cast<size_t>(j)];
  return s;
}

}  // namespace kvo::detail
