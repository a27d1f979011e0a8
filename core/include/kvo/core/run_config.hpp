// One run's configuration, parsed and validated once: the policy with its parameters, the budget
// (total, recent window, per-layer and per-head overrides) and the options every run shares (prompt
// length, seed, layers, heads, grouped-query mode). The CLI, the Python module, replay, verify,
// oracle, eval, the greedy scorer and the cache manager all take this one value.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kvo/core/budget.hpp"
#include "kvo/core/budget_scope.hpp"
#include "kvo/core/policy_registry.hpp"

namespace kvo {

struct Trace;

// How grouped-query attention maps onto caches: one cache per query head, or one per KV head
// driven by the mean or the max of its group's probabilities.
enum class GqaMode { PerQueryHead, KvMean, KvMax };
GqaMode parse_gqa(const std::string& name);  // "query", "kv-mean", "kv-max"
std::string to_string(GqaMode m);

// Whether a command runs budgets shared by several cache units (RunConfig::budget_scope other than
// head): replay, the eviction manager, the decoder and the closed loop do; the checks and oracles
// that compare each head with the optimum of its own budget refuse them.
enum class SharedBudgets { Refused, Allowed };

struct RunConfig {
  PolicySpec policy;
  Budget budget;
  GqaMode gqa = GqaMode::PerQueryHead;
  int prompt_len = 0;       // steps < prompt_len are prefill (full attention, one truncation)
  std::uint64_t seed = 0;   // randomised policies: unit u uses seed + u
  std::vector<int> layers;  // empty: all layers
  std::vector<int> heads;   // empty: all; else only these query heads (KV heads in the kv-* modes)
  // Who shares a budget: head (each cache unit keeps its own), layer (the units of a layer share
  // the sum of their budgets) or model (every unit shares the sum). A shared budget evicts, after
  // each step, the lowest eviction_scores() across the group's units (core/shared_budget.hpp).
  BudgetScope budget_scope = BudgetScope::Head;

  // The budget of one cache unit: the whole sequence for a policy that is not budgeted (full).
  ResolvedBudget unit_budget(int n, int layer, int head) const;
  // The layers a run covers (all when empty); kvo::Error naming a layer the trace lacks.
  std::vector<int> chosen_layers(int n_layers) const;
  // Heads per layer a run covers (all when empty); kvo::Error naming a head the trace lacks.
  std::vector<int> chosen_heads(int unit_heads) const;
  // Refuses, with one line, what cannot run on this trace: a prompt outside [0, n], a missing
  // layer or head, a budget that does not resolve for some unit, a budget scope refused here.
  void validate(const Trace& trace, SharedBudgets shared = SharedBudgets::Refused) const;
  // Refuses, with one line, a budget scope this command or this policy cannot run: layerwise (an
  // allocation rule of the optima, not a victim rule), a shared scope where `shared` is Refused, or a
  // shared scope for a policy without a per-token score to compare across units.
  void validate_budget_scope(SharedBudgets shared) const;
  // This configuration with another policy (its parameters kept).
  RunConfig with_policy(PolicyId id) const;
};

}  // namespace kvo
