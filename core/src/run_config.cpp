#include "kvo/core/run_config.hpp"

#include <algorithm>
#include <numeric>

#include "kvo/core/error.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

GqaMode parse_gqa(const std::string& name) {
  if (name == "query") return GqaMode::PerQueryHead;
  if (name == "kv-mean") return GqaMode::KvMean;
  if (name == "kv-max") return GqaMode::KvMax;
  throw Error("unknown GQA mode '" + name + "' (expected query, kv-mean or kv-max)");
}

std::string to_string(GqaMode m) {
  switch (m) {
    case GqaMode::PerQueryHead:
      return "query";
    case GqaMode::KvMean:
      return "kv-mean";
    case GqaMode::KvMax:
      return "kv-max";
  }
  return "?";
}

ResolvedBudget RunConfig::unit_budget(int n, int layer, int head) const {
  if (!policy_traits(policy.id).budgeted) return ResolvedBudget{n, n, 0};
  return budget.resolve(n, layer, head);
}

std::vector<int> RunConfig::chosen_layers(int n_layers) const {
  for (int l : layers)
    require(l >= 0 && l < n_layers,
            "layer " + std::to_string(l) + " is not in the trace (it has " + std::to_string(n_layers) + ")");
  if (!layers.empty()) return layers;
  std::vector<int> all(static_cast<size_t>(n_layers));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

std::vector<int> RunConfig::chosen_heads(int unit_heads) const {
  for (int h : heads)
    require(h >= 0 && h < unit_heads,
            "head " + std::to_string(h) + " is not in the trace (it has " + std::to_string(unit_heads) + ")");
  std::vector<int> out;
  for (int h = 0; h < unit_heads; ++h)
    if (heads.empty() || std::find(heads.begin(), heads.end(), h) != heads.end()) out.push_back(h);
  return out;
}

void RunConfig::validate_budget_scope(SharedBudgets shared) const {
  if (budget_scope == BudgetScope::Head) return;
  const std::string scope = "budget scope '" + budget_scope_name(budget_scope) + "'";
  require(budget_scope != BudgetScope::Layerwise,
          scope +
              " is an allocation of the optima (kvoracle oracle allocation), not a rule a policy evicts by; "
              "policies share a budget by head, layer or model");
  require(shared == SharedBudgets::Allowed,
          scope +
              " is refused here: these results compare each cache unit with its own budget "
              "(a policy shares one in replay, eval, tasks' dynamic protocol and the eviction manager; "
              "the optima share theirs through --scopes)");
  require(policy_traits(policy.id).prefill_score,
          scope + ": policy " + policy_name(policy.id) +
              " has no per-token score to compare across cache units (shared budgets run with " +
              policy_names_where([](const PolicyTraits& t) { return t.prefill_score; }) + ")");
}

void RunConfig::validate(const Trace& trace, SharedBudgets shared) const {
  validate_budget_scope(shared);
  require(prompt_len >= 0 && prompt_len <= trace.n_tokens,
          "prompt length " + std::to_string(prompt_len) + " is outside [0, " + std::to_string(trace.n_tokens) + "]");
  const int unit_heads = gqa == GqaMode::PerQueryHead ? trace.n_heads : trace.n_kv_heads;
  const std::vector<int> hs = chosen_heads(unit_heads);
  for (int l : chosen_layers(trace.n_layers))
    for (int h : hs) unit_budget(trace.n_tokens, l, h);
}

RunConfig RunConfig::with_policy(PolicyId id) const {
  RunConfig c = *this;
  c.policy.id = id;
  return c;
}

}  // namespace kvo
