#include "kvo/core/policy.hpp"

#include <algorithm>
#include <limits>

#include "kvo/core/error.hpp"

namespace kvo {

std::vector<int> EvictionPolicy::attended(int i) const {
  std::vector<int> a = cache();
  a.push_back(i);
  return a;
}

void NestedPolicy::begin(const PolicySetup& setup) {
  setup_ = setup;
  cache_.clear();
  cache_.reserve(static_cast<size_t>(setup.budget.total) + 1);
  on_begin();
}

void NestedPolicy::observe(int i, std::span<const int> attended, std::span<const double> probs) {
  on_attend(i, attended, probs);
  cache_.push_back(i);
  if (setup_.group_evicts || i < setup_.prompt_len - 1) return;  // prefill: the prompt stays whole until its last token
  while (static_cast<int>(cache_.size()) > setup_.budget.total) {
    const size_t pos = victim(i);
    on_evict(cache_[pos]);
    cache_.erase(cache_.begin() + static_cast<long>(pos));
  }
}

void NestedPolicy::evict(std::span<const int> tokens) {
  size_t next = 0;  // tokens and cache_ are both ascending: one merge pass
  std::erase_if(cache_, [&](int j) {
    if (next == tokens.size() || tokens[next] != j) return false;
    ++next;
    on_evict(j);
    return true;
  });
  require(next == tokens.size(), "internal: " + name() + " was asked to evict a token it does not hold");
}

size_t NestedPolicy::candidates(int recent) const {
  const size_t r = static_cast<size_t>(std::max(recent, 0));
  return cache_.size() > r ? cache_.size() - r : 0;
}

size_t NestedPolicy::argmin_score(const std::vector<double>& score, size_t count) const {
  size_t best = 0;
  for (size_t p = 1; p < count; ++p)
    if (score[cache_[p]] < score[cache_[best]]) best = p;  // strict: ties keep the oldest
  return best;
}

std::vector<double> NestedPolicy::with_recent_window(std::vector<double> score, int recent) const {
  if (!cache_.empty() && score.size() <= static_cast<size_t>(cache_.back())) score.resize(cache_.back() + 1, 0.0);
  for (size_t p = candidates(recent); p < cache_.size(); ++p)
    score[static_cast<size_t>(cache_[p])] = std::numeric_limits<double>::infinity();
  return score;
}

}  // namespace kvo
