// `kvoracle replay` as a library call: a request (policy, run options, what to record; validate()
// and a JSON form) resolved against a trace into ReplayOptions, and the two views of a result the
// CLI and Python show: one JSON record per (head, step), and a summary per layer.
#pragma once
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "kvo/core/replay.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/core/work_team.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

struct ReplayRequest {
  PolicyId policy = PolicyId::H2O;
  RunOptions run;             // budget, policy parameters, GQA mode, prompt (the trace's by default), layers, heads
  bool record_sets = true;    // attended / kept / evicted sets per step (off: O(n d) memory per head)
  bool record_probs = false;  // the renormalised probabilities per step
  int threads = 0;            // <= 0: all cores

  // kvo::Error naming the option: a run option that does not parse or a policy parameter out of
  // range (what needs the trace, a budget larger than n or a layer it lacks, fails in options()).
  void validate() const;
  static const Schema<ReplayRequest>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;
  static ReplayRequest from_json(const nlohmann::json& j);
  ReplayOptions options(const Trace& trace) const;  // validated against the trace
};

// The heads of `trace` replayed through `team` (ReplayPlan: every head its own unit; under MPI every
// member holds the trace); the result on the leader, nothing elsewhere. The request is validated
// against the trace on every member first.
std::optional<ReplayResult> run_replay(const Trace& trace, const ReplayRequest& request,
                                       const WorkTeam& team = WorkTeam());

// One JSON object per head and step, heads in the result's order (what `replay --out` writes as
// JSON Lines): layer, head, step, attended, kept, evicted, reentered, retained_mass, accumulated,
// and probs when asked for.
void write_step_records(std::ostream& out, const ReplayResult& result, bool probs);

struct ReplayLayerSummary {
  int layer = 0, heads = 0, k = 0;  // k: the budget of the layer's last head
  long evictions = 0, reentries = 0;
  double mean_retained_mass = 0.0;   // mean over the layer's heads of their mean
  double worst_retained_mass = 1.0;  // the lowest head mean
};
std::vector<ReplayLayerSummary> replay_layer_summary(const ReplayResult& result);  // by layer
// What `kvoracle replay` shows: the run's policy, budget and GQA mode, then per layer its heads,
// k, evictions, re-entries and retained mass (mean and worst head).
Report replay_report(const ReplayResult& result, const ReplayOptions& options, const std::string& trace, int n_tokens);

}  // namespace kvo
