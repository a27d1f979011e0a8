// `kvoracle score` as a library call: a request (policy of the H2O family, run options, several
// budgets, device; validate() and a JSON form) resolved against a trace into ScorerOptions, and
// the two views of a result the CLI shows: per-step JSON records and a summary per budget.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "kvo/core/run_options.hpp"
#include "kvo/gpu/scorer.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

struct ScoreRequest {
  PolicyId policy = PolicyId::H2O;   // a policy with a scorer kernel (h2o, h2o-paper)
  RunOptions run;                    // budget (when `budgets` is empty), recent, overrides, prompt, layers, heads
  std::vector<std::string> budgets;  // several totals in one pass ("5%", "64"); empty: run.budget alone
  std::string device = "cpu";        // cpu (the twin), cuda, or auto (the GPU when there is one)
  int threads = 0;                   // the twin's threads; <= 0: all cores

  // kvo::Error naming the option: a policy without a scorer kernel, gqa other than query, a
  // device or budget that does not parse, a run option out of range.
  void validate() const;
  static const Schema<ScoreRequest>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;
  static ScoreRequest from_json(const nlohmann::json& j);
  ScorerOptions options(const Trace& trace) const;  // validated against the trace
  std::vector<std::string> budget_labels() const;   // `budgets`, or run.budget alone: as given
};

// The scorer over every head of `trace` at every budget of the request, on its device (the CPU
// twin on request.threads, or CUDA); the request is validated against the trace first.
ScorerResult run_score(const Trace& trace, const ScoreRequest& request);

// One JSON object per unit and step (what `score --out` writes as JSON Lines): layer, head,
// budget (its text), step, kept, evicted.
void write_score_records(std::ostream& out, const Trace& trace, const ScorerResult& result,
                         const std::vector<Budget>& budgets);

struct ScoreBudgetSummary {
  std::string budget;
  int k = 0;  // the first head's
  long heads = 0, evictions = 0;
  double mean_kept_score = 0.0;  // over the tokens kept to the end, every head
};
std::vector<ScoreBudgetSummary> score_summary(const ScorerResult& result, const std::vector<Budget>& budgets);
// What `kvoracle score` shows: the policy, the device, and per budget its heads, evictions and the
// mean final score of the kept tokens.
Report score_report(const ScorerResult& result, const std::vector<Budget>& budgets, PolicyId policy,
                    const std::string& trace, int n_tokens);

}  // namespace kvo
