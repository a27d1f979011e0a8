// The named eviction policies (semantics in docs/policies.md; docs/theory.md §1.7). Tie rule of every
// score-based policy: among equal scores the oldest token is evicted.
#pragma once
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "kvo/core/policy.hpp"
#include "kvo/core/policy_registry.hpp"

namespace kvo {

// Keeps every token (the reference every other policy is compared with).
class FullCachePolicy final : public EvictionPolicy {
 public:
  std::string name() const override { return policy_name(PolicyId::Full); }
  void begin(const PolicySetup&) override { cache_.clear(); }
  void observe(int i, std::span<const int>, std::span<const double>) override { cache_.push_back(i); }
  const std::vector<int>& cache() const override { return cache_; }

 private:
  std::vector<int> cache_;
};

// Sliding window: keeps the most recent `total` tokens.
class WindowPolicy final : public NestedPolicy {
 public:
  std::string name() const override { return policy_name(PolicyId::Window); }

 protected:
  size_t victim(int) override { return 0; }
};

// StreamingLLM: the first `sinks` tokens plus a window of the most recent total - sinks tokens.
class StreamingPolicy final : public NestedPolicy {
 public:
  explicit StreamingPolicy(int sinks) : sinks_(sinks) {}
  std::string name() const override { return policy_name(PolicyId::Streaming); }

 protected:
  size_t victim(int) override;

 private:
  int sinks_;
};

// TOVA: evicts the token the current query attends least (new token included, no window).
class TovaPolicy final : public NestedPolicy {
 public:
  std::string name() const override { return policy_name(PolicyId::Tova); }

 protected:
  void on_begin() override;
  void on_attend(int i, std::span<const int> attended, std::span<const double> probs) override;
  size_t victim(int) override { return argmin_score(last_, cache().size()); }

 public:
  std::vector<double> eviction_scores() const override { return with_recent_window(last_, 0); }

 private:
  std::vector<double> last_;  // attention of the current query, by token
};

// Scissorhands (persistence of importance): a token is "unimportant" at a step when its attention
// is below the uniform share 1/|attended|; outside the recent window, evict the token with the
// most unimportant marks over the last `history` steps (ties: the oldest).
class ScissorhandsPolicy final : public NestedPolicy {
 public:
  explicit ScissorhandsPolicy(int history) : history_(history) {}
  std::string name() const override { return policy_name(PolicyId::Scissorhands); }

 protected:
  void on_begin() override;
  void on_attend(int i, std::span<const int> attended, std::span<const double> probs) override;
  size_t victim(int) override;

 public:
  std::vector<double> eviction_scores() const override;  // minus the marks: the most marked goes first

 private:
  int history_;
  std::vector<int> marks_;               // unimportant marks in the history, by token
  std::deque<std::vector<int>> window_;  // tokens marked at each of the last `history` steps
};

// Random: evicts a uniformly random token outside the recent window (seeded, deterministic).
class RandomPolicy final : public NestedPolicy {
 public:
  std::string name() const override { return policy_name(PolicyId::Random); }

 protected:
  void on_begin() override { rng_.seed(setup().seed); }
  size_t victim(int) override;

 private:
  std::mt19937_64 rng_;
};

// H2O as recommended (docs/theory.md §1.7) and as in the real-drop code (H2OKVCache_LayerWise):
// accumulate the attention renormalised over the actual cache; outside the window of the last
// `recent` tokens, evict the smallest accumulated score. The prefill accumulates the full prompt
// attention and is truncated once to the top-heavy scores over [0, P - r) plus the last r.
class H2OPolicy final : public NestedPolicy {
 public:
  explicit H2OPolicy(std::string name = policy_name(PolicyId::H2O)) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  const std::vector<double>& scores() const { return score_; }
  std::vector<double> eviction_scores() const override { return with_recent_window(score_, setup().budget.recent); }

 protected:
  void on_begin() override;
  void on_attend(int i, std::span<const int> attended, std::span<const double> probs) override;
  size_t victim(int) override { return argmin_score(score_, candidates(setup().budget.recent)); }

 private:
  std::string name_;
  std::vector<double> score_;  // accumulated attention, by token
};

// H2O as in the masking code (h2o_hf/utils_hh): the query attends the last r positions plus the
// top-h accumulated scores over [0, L - r); the token leaving the window is masked for one step
// and keeps its score, so it can re-enter; with r = 0 no score is ever zeroed. Not nested.
class H2OMaskPolicy final : public EvictionPolicy {
 public:
  std::string name() const override { return policy_name(PolicyId::H2OMask); }
  bool nested() const override { return false; }
  void begin(const PolicySetup& setup) override;
  std::vector<int> attended(int i) const override;
  void observe(int i, std::span<const int> attended, std::span<const double> probs) override;
  const std::vector<int>& cache() const override { return cache_; }

 private:
  PolicySetup setup_;
  std::vector<double> score_;
  std::vector<int> next_;   // keys the next query attends (new token included when r >= 1)
  std::vector<int> cache_;  // next_ without the new token
  bool active_ = false;
};

// Replays a fixed schedule: token j stays until step end[j] (j - 1: never kept). The oracle policy
// follows the offline optimum this way, its schedule taken per unit from a ScheduleSource.
class ScheduledPolicy final : public EvictionPolicy {
 public:
  ScheduledPolicy(std::string name, std::vector<int> end) : name_(std::move(name)), end_(std::move(end)) {}
  ScheduledPolicy(std::string name, std::shared_ptr<const ScheduleSource> source)
      : name_(std::move(name)), source_(std::move(source)) {}
  std::string name() const override { return name_; }
  void begin(const PolicySetup& setup) override;
  void observe(int i, std::span<const int> attended, std::span<const double> probs) override;
  const std::vector<int>& cache() const override { return cache_; }

 private:
  std::string name_;
  std::shared_ptr<const ScheduleSource> source_;
  std::vector<int> end_;
  std::vector<int> cache_;
};

}  // namespace kvo
