// The eviction-policy interface the replay engine drives, one instance per cache unit (a query
// head, or a KV head whose group's attention is aggregated). Per step i the engine asks which keys
// query i attends, hands back the query's renormalised probabilities over them, and reads the
// cache that remains. NestedPolicy is the shared base of every policy whose cache obeys
// S_i ⊆ S_{i-1} ∪ {i}.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvo/core/budget.hpp"

namespace kvo {

class HeadView;

struct PolicySetup {
  int n = 0;               // sequence length
  ResolvedBudget budget;   // total = heavy + recent
  int prompt_len = 0;      // steps i < prompt_len attend the whole prefix (prefill)
  std::uint64_t seed = 0;  // for randomised policies
  int layer = 0;           // the cache unit: its layer and head (query head, or KV head with GQA)
  int unit_head = 0;
  // Dense causal attention of the unit (mean over its query heads); set only when the policy
  // says needs_dense(). Objective-driven policies read rows <= i at step i (no look-ahead).
  const Eigen::MatrixXd* dense = nullptr;
  const HeadView* head = nullptr;  // the unit's first query head (values, for fidelity objectives)
  // The unit shares its budget with others (RunConfig::budget_scope): observe() only appends, and
  // the group evicts through NestedPolicy::evict (core/shared_budget.hpp).
  bool group_evicts = false;
};

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual std::string name() const = 0;
  // false when an evicted token may come back (the H2O masking code); the replay records re-entries.
  virtual bool nested() const { return true; }
  virtual bool needs_dense() const { return false; }

  virtual void begin(const PolicySetup& setup) = 0;
  // Keys query i attends, ascending. Default: cache() ∪ {i}.
  virtual std::vector<int> attended(int i) const;
  // Step i: probs are the query's attention renormalised over `attended` (aggregated over the
  // unit's query heads). Updates the cache.
  virtual void observe(int i, std::span<const int> attended, std::span<const double> probs) = 0;
  // Cache after the last observe: tokens <= i kept for later queries, ascending.
  virtual const std::vector<int>& cache() const = 0;
  // The score its victims follow after the last observe, when its rule is "evict the lowest of a
  // per-token score" (the registry's prefill_score trait): by token, higher kept first, the
  // protected recent window +inf, so that a prompt cut keeps a top-k of it. Empty otherwise.
  virtual std::vector<double> eviction_scores() const { return {}; }
};

// Base of nested policies: appends each new token and, once the prompt is in, evicts one victim
// at a time while the cache exceeds the budget. The prompt (steps < prompt_len) is held in full
// and truncated once after its last token, by the same victim rule.
class NestedPolicy : public EvictionPolicy {
 public:
  void begin(const PolicySetup& setup) final;
  void observe(int i, std::span<const int> attended, std::span<const double> probs) final;
  const std::vector<int>& cache() const final { return cache_; }
  // Removes `tokens` (held, ascending) from the cache: what a shared budget's group decided.
  void evict(std::span<const int> tokens);
  const ResolvedBudget& budget() const { return setup_.budget; }

 protected:
  virtual void on_begin() {}
  // Called with the query's probabilities before the new token joins the cache.
  virtual void on_attend(int /*i*/, std::span<const int> /*attended*/, std::span<const double> /*probs*/) {}
  // Position in cache() of the token to evict at step i (the cache then holds budget+1 tokens).
  virtual size_t victim(int i) = 0;
  virtual void on_evict(int /*token*/) {}

  // Number of leading cache positions outside the protected recent window of r tokens.
  size_t candidates(int recent) const;
  // Position of the smallest score among the first `count` cache entries; ties evict the oldest.
  size_t argmin_score(const std::vector<double>& score_by_token, size_t count) const;
  // eviction_scores() of a score by token: the cache's last `recent` tokens raised to +inf.
  std::vector<double> with_recent_window(std::vector<double> score_by_token, int recent) const;

  const PolicySetup& setup() const { return setup_; }

 private:
  PolicySetup setup_;
  std::vector<int> cache_;
};

}  // namespace kvo
