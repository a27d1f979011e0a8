// H2O as the masking code (h2o_hf/utils_hh) runs it: heavy set recomputed from all scores each
// step, so evicted tokens may re-enter.
#include <algorithm>
#include <numeric>

#include "kvo/core/policies.hpp"

namespace kvo {

void H2OMaskPolicy::begin(const PolicySetup& setup) {
  setup_ = setup;
  score_.assign(static_cast<size_t>(setup.n), 0.0);
  next_.clear();
  cache_.clear();
  active_ = false;
}

std::vector<int> H2OMaskPolicy::attended(int i) const {
  if (!active_) {
    std::vector<int> all(static_cast<size_t>(i) + 1);
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  return next_;
}

void H2OMaskPolicy::observe(int i, std::span<const int> attended, std::span<const double> probs) {
  for (size_t t = 0; t < attended.size(); ++t) score_[attended[t]] += probs[t];
  const int length = i + 1;  // tokens scored so far
  const int h = setup_.budget.heavy;
  const int r = setup_.budget.recent;
  if (i < setup_.prompt_len - 1 || length <= h + r) {  // prefill runs in one pass; mask inactive
    active_ = false;
    cache_.resize(static_cast<size_t>(length));
    std::iota(cache_.begin(), cache_.end(), 0);
    return;
  }
  active_ = true;
  // Heavy: top-h scores over positions [0, length - r); ties keep the newer token.
  std::vector<int> pool(static_cast<size_t>(length - r));
  std::iota(pool.begin(), pool.end(), 0);
  const size_t take = std::min(pool.size(), static_cast<size_t>(h));
  std::partial_sort(pool.begin(), pool.begin() + static_cast<long>(take), pool.end(),
                    [&](int a, int b) { return score_[a] > score_[b] || (score_[a] == score_[b] && a > b); });
  std::vector<char> keep(static_cast<size_t>(length) + 1, 0);
  for (size_t t = 0; t < take; ++t) keep[pool[t]] = 1;
  for (int j = length + 1 - r; j <= length; ++j) keep[j] = 1;  // last r of the next length+1
  next_.clear();
  cache_.clear();
  for (int j = 0; j <= length; ++j)
    if (keep[j]) {
      next_.push_back(j);
      if (j < length) cache_.push_back(j);
    }
  // Scores survive for kept tokens and for the last r scored positions (code: score_mask[-r:] = 1;
  // with r = 0 the slice is everything, so nothing is zeroed).
  if (r > 0)
    for (int j = 0; j < length - r; ++j)
      if (!keep[j]) score_[j] = 0.0;
}

}  // namespace kvo
