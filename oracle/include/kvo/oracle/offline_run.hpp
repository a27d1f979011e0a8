// `kvoracle oracle offline` as a library call: the exact offline optimum OPT_dyn of the nested
// problem on every head of a trace file, each policy's retained dense mass and competitive ratio
// against it, and the ordering policy <= OPT_dyn <= sum_i opt_i with its certificates.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/policy_registry.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/core/work_team.hpp"
#include "kvo/oracle/competitive.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

struct OfflineOracleRequest {
  RunOptions run;  // budget, policy parameters, layers, heads; prompt_len from the trace
  std::vector<PolicyId> policies = default_policies(PolicyListUse::Checks);
  int forced_window = 0;  // the last r tokens forced into OPT_dyn's caches (0: the paper's problem)

  // kvo::Error naming the option: no policy, forced_window below 0.
  void validate() const;
  static const Schema<OfflineOracleRequest>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;
  static OfflineOracleRequest from_json(const nlohmann::json& j);
};

// One policy over every head.
struct OfflinePolicySummary {
  std::string policy;
  bool nested = true;
  double mean_value = 0.0, mean_ratio = 0.0, worst_ratio = 0.0;
  double max_excess = 0.0;  // max over heads of value - OPT_dyn (> 0 only outside OPT_dyn's problem)
  std::string outside;      // the first reason the ordering does not apply ("" when checked)
};

struct OfflineOracleResult {
  std::string trace;  // the trace's name in the JSON form and the report: `run_offline_oracle`'s `name`
  std::string budget;
  int n_tokens = 0, forced_window = 0;
  std::vector<HeadCompetitive> heads;          // by layer, head
  double opt_dyn_sum = 0.0, static_sum = 0.0;  // over heads
  std::vector<OfflinePolicySummary> policies;
  long violations = 0;                  // ordering or certificate failures over every head: a kvoracle bug when not 0
  nlohmann::json to_json() const;       // the --json file: trace, forced_window, every head
  nlohmann::json summary_json() const;  // the summary the CLI prints, as JSON
  // What `oracle offline` shows (oracle_reports.cpp): the means per head, each policy's ratios and
  // whether the ordering applies, and the verdict on the ordering and certificates.
  Report report() const;
};

// The heads of `trace` run through `team` (under MPI every member holds the trace); the result on
// its leader, nothing elsewhere. `name` labels the trace in the result (its file, for the CLI).
std::optional<OfflineOracleResult> run_offline_oracle(const Trace& trace, const OfflineOracleRequest& request,
                                                      const WorkTeam& team = WorkTeam(),
                                                      const std::string& name = "the trace");

}  // namespace kvo
