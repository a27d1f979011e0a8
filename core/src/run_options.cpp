#include "kvo/core/run_options.hpp"

#include "kvo/core/concave.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

namespace {

using O = RunOptions;

const char* const kPolicy = "Policy parameters";
const char* const kBudget = "Budget";
const char* const kRun = "Run";

}  // namespace

const Schema<RunOptions>& run_options_schema() {
  static const Schema<RunOptions> schema(
      "run options",
      {
          member(&O::sinks,
                 {.name = "sinks", .help = "streaming: attention-sink tokens kept forever", .group = kPolicy}),
          member(&O::history, {.name = "history", .help = "scissorhands: steps of history", .group = kPolicy}),
          member(&O::objective, {.name = "objective",
                                 .help = "greedy: set function (acc, one-step, dense-acc, mass, fl, sat-cov, fidelity)",
                                 .group = kPolicy}),
          member(&O::concave, {.name = "concave",
                               .help = "concave transform h of h2o-paper / greedy objectives: id, sqrt, log",
                               .alias = "--h",
                               .group = kPolicy}),
          member(&O::window, {.name = "window", .help = "fl / sat-cov objectives: client queries", .group = kPolicy}),
          member(&O::alpha, {.name = "alpha", .help = "sat-cov objective: saturation fraction", .group = kPolicy}),
          member(&O::budget, {.name = "budget",
                              .help = "KV budget per head: tokens (64) or a ratio of n (0.2, 20%)",
                              .alias = "-b",
                              .group = kBudget,
                              .use = kBudgetTotalUse}),
          member(&O::recent,
                 {.name = "recent",
                  .help = "recent-window part of the budget: tokens or a ratio of the budget (default: half)",
                  .group = kBudget}),
          member(&O::budget_overrides, {.name = "budget_overrides",
                                        .help = "per-layer or per-head budget: L3=0.1, L3H2=32 (repeatable)",
                                        .flag = "--budget-override",
                                        .group = kBudget}),
          member(&O::budget_scope,
                 {.name = "budget_scope",
                  .help = "who shares the budget: head (each cache unit its own), layer (a layer's units share "
                          "their sum) or model; layer and model evict the lowest score across the group (h2o, "
                          "tova, scissorhands; replay, eval, tasks and the eviction manager)",
                  .group = kBudget}),
          member(&O::seed, {.name = "seed", .help = "seed of randomised policies", .group = kRun}),
          member(&O::gqa, {.name = "gqa",
                           .help = "grouped-query attention: query (a cache per query head), kv-mean, kv-max",
                           .group = kRun,
                           .use = kTraceSelectionUse}),
          member(&O::prompt_len,
                 {.name = "prompt_len",
                  .help = "prefill length: steps before it attend the full prefix (default: the trace's prompt_len)",
                  .group = kRun,
                  .use = kTraceSelectionUse}),
          member(&O::layers,
                 {.name = "layers", .help = "layers to run (default: all)", .group = kRun, .use = kTraceSelectionUse}),
          member(&O::heads, {.name = "heads",
                             .help = "heads to run, per layer (query heads, or KV heads with gqa kv-mean / kv-max)",
                             .group = kRun,
                             .use = kTraceSelectionUse}),
      });
  return schema;
}

RunConfig RunOptions::build(PolicyId policy, const Trace* trace, SharedBudgets shared) const {
  RunConfig c;
  c.policy.id = policy;
  c.policy.sinks = sinks;
  c.policy.history = history;
  c.policy.objective.name = objective;
  c.policy.objective.h = parse_concave(concave);
  c.policy.objective.window = window;
  c.policy.objective.alpha = alpha;
  if (!policy_traits(policy).offline) make_policy(c.policy);  // validates the parameters and the objective
  c.budget = Budget::parse(budget, recent, budget_overrides);
  c.gqa = parse_gqa(gqa);
  c.prompt_len = prompt_len.value_or(trace ? trace->prompt_len : 0);
  c.seed = seed;
  c.layers = layers;
  c.heads = heads;
  const std::vector<BudgetScope> scope = parse_budget_scopes(budget_scope);
  require(scope.size() == 1, "budget_scope: give one scope (head, layer or model)");
  c.budget_scope = scope.front();
  c.validate_budget_scope(shared);
  if (trace) c.validate(*trace, shared);
  return c;
}

}  // namespace kvo
