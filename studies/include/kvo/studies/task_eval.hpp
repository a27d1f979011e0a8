// Task accuracy under eviction (kvoracle tasks run): every instance answered greedily by the full
// cache, by every policy at every budget and, under prefill compression, by every press and the
// prefill optimum; each answer scored by the instance's rule, with whether the needles were still
// cached when the question was read. Streaming eviction runs each instance at the cost of one
// prefill (EvictingDecoder::prefill), then decodes the answer token by token.
#pragma once
#include <cmath>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/core/budget_scope.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/run_config.hpp"
#include "kvo/core/work_team.hpp"
#include "kvo/model/llama.hpp"
#include "kvo/oracle/prefill_oracle.hpp"
#include "kvo/studies/tasks.hpp"

namespace kvo::studies {

// (a) dynamic (streaming eviction): every step evicts once the budget is full, over the whole input (the paper's
// dynamic setting); (b) prefill: the context prefilled whole, compressed once, then the question
// and the answer on the compressed cache (kvpress's pipeline).
enum class TaskProtocol { Streaming, Prefill };
std::string_view to_string(TaskProtocol p);
TaskProtocol parse_task_protocol(std::string_view name);  // "dynamic", "prefill"

// The rows that are not a policy or a press: the full cache, and the exact prefill optimum.
inline constexpr std::string_view kFullCacheRow = "full-cache";
inline constexpr std::string_view kPrefillOptimumRow = "optimum";
inline constexpr std::string_view kTopKRow = "topk";  // streaming: the oracle top-k (topk_decoder.hpp)

struct TaskEvalRequest {
  TaskProtocol protocol = TaskProtocol::Streaming;
  // Streaming: decoder policies and `oracle` (evicting along the offline optimum of the full
  // cache's trace of the whole instance, its answer included). Prefill: policies as presses.
  std::vector<PolicyId> policies = default_policies(PolicyListUse::Eval);
  std::vector<PressId> presses;  // prefill only
  // Shares kept: of the input's tokens per (layer, KV head) (streaming), of the context (prefill).
  std::vector<double> budgets = {0.1, 0.2, 0.5};
  bool optimum = true;  // prefill: the prefill optimum's row (the mass of the question and answer)
  // Prefill: the optimum's rows per budget scope: head ("optimum", each unit keeps k) and the
  // shared budgets of the same total ("optimum@layer", ...; units keep different counts).
  std::vector<BudgetScope> optimum_scopes = {BudgetScope::Head};
  // Streaming: the oracle top-k's row (nothing evicted; each query attends its k heaviest keys).
  bool topk = true;
  bool question_first = false;  // the question also opens the context
  PromptFormat format = PromptFormat::Plain;
  // The full cache answers every instance first (its answer is what the references' traces hold
  // and what the report compares against). false (streaming without oracle only): skip it.
  bool full_cache = true;
  RunConfig run;                  // the policies' parameters, the budget's recent part, the seed
  PressOptions press;             // the presses' parameters (compression_ratio is set per budget)
  std::function<void()> on_unit;  // progress: one call per (instance, row, budget) answered
  // kvo::Error naming the option: no budget, a budget outside (0, 1], a press or the optimum under
  // streaming, a policy the protocol cannot run.
  void validate() const;
};

struct TaskOutcome {
  std::string instance, task;
  int length = 0;
  double depth = -1.0;
  int shots = 0;         // worked examples opening the input (TaskInstance::shots)
  int input_tokens = 0;  // examples + context + question block
  std::string row;       // kFullCacheRow, a policy's or press's name, kPrefillOptimumRow or "optimum@<scope>"
  double budget = 1.0;   // the share kept (1: the full cache)
  double kept = 0.0;     // mean tokens held per (layer, KV head) when the question is read
  double score = 0.0;
  std::string answer;
  // Share of (layer, KV head) units holding every needle token when the question is read (NaN
  // when the instance has no needles).
  double needles_held = NAN;
  // Attention mass the question's and answer's queries (the full cache's trace) give the context
  // tokens held when the question is read, as a share of the most a set of the row's budget can
  // hold (the prefill optimum's objective), mean over (layer, KV head) units. 1 for the full cache;
  // NaN for the oracle top-k (nothing is evicted) and without the full cache's run.
  double mass_of_optimum = NAN;
};

struct TaskEvalResult {
  TaskProtocol protocol = TaskProtocol::Streaming;
  std::vector<TaskOutcome> outcomes;  // per instance: the full cache, then rows x budgets
};

// The reference of TaskOutcome::mass_of_optimum, built once per instance from the full cache's
// trace of the whole instance (context, question, answer) and asked once per row: the question's
// and answer's queries on the context, per (layer, KV head), layer-major.
class MassOfOptimum {
 public:
  MassOfOptimum() = default;  // no reference: every mass is NaN
  // kvo::Error when the context is not shorter than the trace.
  MassOfOptimum(const Trace& full, int context);
  // The mass of kept sets (context positions, one set per unit) for a row whose budget is k tokens,
  // as a share of the most a set of k (or of the set's size, when larger) can hold, mean over units.
  // kvo::Error for sets that are not one per unit or hold a position outside the context.
  double operator()(std::span<const std::vector<int>> kept, int k) const;
  // Another full-cache run of the same context (a second question, as kvpress's pipeline asks
  // several of one compressed context): its queries' weights add to every unit's, so the optimum
  // and the masses are those of every question together. kvo::Error for a different context or shape.
  void add(const Trace& full);
  // The exact optimum's kept sets at per-unit budget k: per-head budgets (BudgetScope::Head) or
  // one shared by a layer's or the model's units with the same total (shared_prefill_sets).
  std::vector<std::vector<int>> optimum_sets(BudgetScope scope, int k) const;
  const std::vector<PrefillUnit>& units() const { return units_; }

 private:
  int context_ = 0, kv_heads_ = 0;
  std::vector<PrefillUnit> units_;
};

// MassOfOptimum(full, context)(kept, k), for one row.
double mass_of_optimum(const Trace& full, int context, std::span<const std::vector<int>> kept, int k);

// The rows a request answers besides the full cache, in outcome order, as outcomes and cells name
// them: under the prefill protocol a press and a policy that share a name are "press:NAME" and
// "policy:NAME" (kvo/core/policy_press.hpp); validate() refuses a request that names a row twice.
std::vector<std::string> task_row_names(const TaskEvalRequest& request);
// Units for a progress bar.
long task_eval_units(std::size_t instances, const TaskEvalRequest& request);
// kvo::Error for an instance longer than the model's positions (with its answer) or with no answer.
TaskEvalResult evaluate_tasks(const model::Llama& model, std::span<const TaskInstance> instances,
                              const TaskEvalRequest& request);
// The same outcomes through a work team (kvo/core/work_team.hpp): one unit per instance, because
// its rows share the full cache's run (one prefill, its cache and trace); largest first, spread over
// MPI ranks and kept in a checkpoint when the team has one (scaleout::RankTeam). A team of one
// thread suits it (the model's matrix products already use the cores, and the CLI's team has one);
// more threads answer several instances at once, each with its own caches. The leader gets the outcomes in instance
// order, equal to evaluate_tasks' (request.on_unit is not called: the team's bar counts instances); other ranks get
// std::nullopt.
std::optional<TaskEvalResult> run_tasks(const model::Llama& model, std::span<const TaskInstance> instances,
                                        const TaskEvalRequest& request, const WorkTeam& team);

// Accuracy of one cell: mean score over its instances with the Wilson 95% interval.
struct TaskCell {
  std::string task, row;
  int length = 0;
  double depth = -1.0;  // -1: every depth together
  double budget = 1.0;
  int count = 0;
  double accuracy = 0.0, low = 0.0, high = 0.0;
  // The full cache scores 0 on every instance of this (task, length): the model cannot do it, and
  // the cell is left out of policy comparisons.
  bool model_fails = false;
  // Means over the cell's instances that measure them (NaN when none does).
  double needles_held = NAN, mass_of_optimum = NAN;
};
// Cells per task x length x row x budget (by_depth: also per depth), in outcome order.
std::vector<TaskCell> summarize_tasks(const TaskEvalResult& result, bool by_depth = false);
// Wilson score interval at 95% for a mean of n scores in [0, 1].
std::pair<double, double> wilson_interval(double mean, int n);

}  // namespace kvo::studies
