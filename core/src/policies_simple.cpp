// Window, StreamingLLM, TOVA, Scissorhands, random eviction and fixed schedules.
#include <algorithm>

#include "kvo/core/policies.hpp"

namespace kvo {

size_t StreamingPolicy::victim(int) {
  // Sinks are never evicted, so they are the first entries; the oldest non-sink goes.
  const size_t s = static_cast<size_t>(std::clamp(sinks_, 0, setup().budget.total - 1));
  return std::min(s, cache().size() - 1);
}

void TovaPolicy::on_begin() { last_.assign(static_cast<size_t>(setup().n), 0.0); }

void TovaPolicy::on_attend(int, std::span<const int> attended, std::span<const double> probs) {
  for (size_t t = 0; t < attended.size(); ++t) last_[attended[t]] = probs[t];
}

void ScissorhandsPolicy::on_begin() {
  marks_.assign(static_cast<size_t>(setup().n), 0);
  window_.clear();
}

void ScissorhandsPolicy::on_attend(int, std::span<const int> attended, std::span<const double> probs) {
  const double uniform = 1.0 / static_cast<double>(attended.size());
  std::vector<int> marked;
  for (size_t t = 0; t < attended.size(); ++t)
    if (probs[t] < uniform) marked.push_back(attended[t]);
  for (int j : marked) ++marks_[j];
  window_.push_back(std::move(marked));
  if (static_cast<int>(window_.size()) > std::max(history_, 1)) {
    for (int j : window_.front()) --marks_[j];
    window_.pop_front();
  }
}

size_t ScissorhandsPolicy::victim(int) {
  const size_t count = candidates(setup().budget.recent);
  size_t best = 0;
  for (size_t p = 1; p < count; ++p)
    if (marks_[cache()[p]] > marks_[cache()[best]]) best = p;  // ties keep the oldest
  return best;
}

std::vector<double> ScissorhandsPolicy::eviction_scores() const {
  std::vector<double> score(marks_.size());
  for (size_t j = 0; j < marks_.size(); ++j) score[j] = -static_cast<double>(marks_[j]);
  return with_recent_window(std::move(score), setup().budget.recent);
}

size_t RandomPolicy::victim(int) {
  const size_t count = candidates(setup().budget.recent);
  std::uniform_int_distribution<size_t> pick(0, count - 1);
  return pick(rng_);
}

void ScheduledPolicy::begin(const PolicySetup& setup) {
  cache_.clear();
  if (source_) end_ = (*source_)(setup.layer, setup.unit_head);
}

void ScheduledPolicy::observe(int i, std::span<const int>, std::span<const double>) {
  cache_.push_back(i);
  std::erase_if(cache_, [&](int j) { return j >= static_cast<int>(end_.size()) || end_[static_cast<size_t>(j)] < i; });
}

}  // namespace kvo
