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
  // Heavy: top-h scores over positions [0, length - r); ties keep the newer token. After an active
  // step with r >= 1 only last step's heavy set H and the token that left the window, length - 1 - r,
  // can be among them: every other token z of the range had lost to all of H a step ago and was
  // zeroed, and scores never fall, so z could now beat some c in H only at score 0 and as the newer
  // token; but then c scored 0 a step ago as well, and a 0 beat a 0 there only as the newer token.
  const bool narrow = active_ && r > 0;
  active_ = true;
  const size_t range = static_cast<size_t>(length - r), take = std::min(range, static_cast<size_t>(h));
  if (narrow) {  // last step's cache is H and then the r - 1 tokens before the new one
    pool_.assign(cache_.begin(), cache_.end() - (r - 1));
    pool_.push_back(length - 1 - r);
  } else {
    pool_.resize(range);
    std::iota(pool_.begin(), pool_.end(), 0);
  }
  std::partial_sort(pool_.begin(), pool_.begin() + static_cast<long>(take), pool_.end(),
                    [&](int a, int b) { return score_[a] > score_[b] || (score_[a] == score_[b] && a > b); });
  // Scores survive for kept tokens and for the last r scored positions (code: score_mask[-r:] = 1;
  // with r = 0 the slice is everything, so nothing is zeroed); outside the pool they are 0 already.
  if (r > 0)
    for (size_t t = take; t < pool_.size(); ++t) score_[pool_[t]] = 0.0;
  // The next query attends the heavy set and the last r of the next length + 1 positions.
  next_.assign(pool_.begin(), pool_.begin() + static_cast<long>(take));
  std::sort(next_.begin(), next_.end());
  for (int j = length + 1 - r; j <= length; ++j) next_.push_back(j);
  cache_.assign(next_.begin(), next_.end() - (r >= 1 ? 1 : 0));
}

}  // namespace kvo
