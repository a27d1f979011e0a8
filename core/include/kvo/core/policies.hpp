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

// The paper's ablations of h2o's two parts (Table 6, Figure 2c), on h2o's accumulated attention.
// HeavyOnly (`heavy`): heavy hitters alone, the recent window ignored: the smallest score over the
// whole cache leaves, the new token included. MaskHeavy (`anti-h2o`): outside the recent window the
// largest score leaves (ties: the oldest), so the cache holds everything but the heavy hitters.
class HeavyHitterAblationPolicy final : public NestedPolicy {
 public:
  enum class Mode { HeavyOnly, MaskHeavy };
  explicit HeavyHitterAblationPolicy(Mode mode) : mode_(mode) {}
  std::string name() const override;

 protected:
  void on_begin() override { score_.assign(static_cast<size_t>(setup().n), 0.0); }
  void on_attend(int i, std::span<const int> attended, std::span<const double> probs) override;
  size_t victim(int) override;

 private:
  Mode mode_;
  std::vector<double> score_;  // accumulated attention, by token
};

// Keeps the oldest tokens: once the cache is full the token before the new one leaves, so the cache
// is the first k - 1 tokens and the current one (Figure 2c's control that masks the recent tokens).
class OldestPolicy final : public NestedPolicy {
 public:
  std::string name() const override { return policy_name(PolicyId::Oldest); }

 protected:
  size_t victim(int) override { return cache().size() >= 2 ? cache().size() - 2 : 0; }
};

// Look-ahead heavy hitters (the paper's "global" H2, §4.1 and Figure 2d): h2o's rule with every
// token ranked by the attention it receives from all n queries of the unit's dense attention,
// future ones included (column sums); needs the dense attention, so in a decoder it follows the
// schedule this rule gives on the full cache's trace (offline_schedules in the closed loops).
class LookaheadPolicy final : public NestedPolicy {
 public:
  std::string name() const override { return policy_name(PolicyId::Lookahead); }
  bool needs_dense() const override { return true; }
  std::vector<double> eviction_scores() const override { return with_recent_window(score_, setup().budget.recent); }

 protected:
  void on_begin() override;
  size_t victim(int) override { return argmin_score(score_, candidates(setup().budget.recent)); }

 private:
  std::vector<double> score_;  // column sums of the dense attention, by token
};

// The Sparse Transformer's patterns (Child et al. 2019) as nested eviction under a budget k = h + r
// (docs/policies.md, "Sparse-transformer patterns"). Strided: the recent window of r tokens plus a
// lattice of every s-th token, s = ceil(n / p) so that the lattice over the whole sequence fits its
// p long-range slots. Fixed: the current block of l = max(r, 1) tokens plus the last c tokens of
// every block, c = clamp(floor(p l / n), 1, l). With heavy hitters, h / 2 of the h long-range slots
// keep the highest accumulated attention (h2o's score) and p = h - h / 2; otherwise p = h. Victim:
// outside the local part and the heavy hitters, the oldest token off the pattern, else the oldest
// on it.
class SparsePatternPolicy final : public NestedPolicy {
 public:
  enum class Pattern { Strided, Fixed };
  SparsePatternPolicy(Pattern pattern, bool heavy_hitters) : pattern_(pattern), heavy_(heavy_hitters) {}
  std::string name() const override;
  // Whether token j lies on the pattern's long-range part (after begin()).
  bool on_pattern(int j) const;

 protected:
  void on_begin() override;
  void on_attend(int i, std::span<const int> attended, std::span<const double> probs) override;
  size_t victim(int i) override;

 private:
  Pattern pattern_;
  bool heavy_;
  int heavy_slots_ = 0, period_ = 1, summary_ = 1;  // strided: period_ = s; fixed: period_ = l, summary_ = c
  std::vector<double> score_;                       // accumulated attention, by token (heavy hitters only)
  std::vector<size_t> order_;                       // scratch: candidate positions
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
  std::vector<int> pool_;   // scratch: candidates of the top h
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
