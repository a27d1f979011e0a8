// The exact static optimum of every chosen (layer, head) of a trace, at every N-th step and the
// last: `kvoracle oracle static` as a library call. A request (run options: budget, layers, heads,
// objective, concave, window) goes in; every solve with its bounds comes out.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/run_options.hpp"
#include "kvo/core/trace.hpp"
#include "kvo/oracle/static_oracle.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

struct StaticOracleRequest {
  // The objective: dense-acc (A: accumulated dense attention), mass (M: the step's row) or fl
  // (facility location over the last `window` queries); concave transforms A and M.
  RunOptions run = [] {
    RunOptions o;
    o.objective = "dense-acc";
    return o;
  }();
  int every = 1;                  // solve every N-th step (and the last)
  long long node_limit = 200000;  // fl: branch-and-bound nodes per solve; past it inexact, with bounds
  int threads = 0;                // 0: all cores
  std::function<void()> on_head;  // progress: once per finished head (any thread)

  // kvo::Error naming the option: an objective other than dense-acc, mass or fl, every or
  // node_limit below 1, gqa other than query.
  void validate() const;
  static const Schema<StaticOracleRequest>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;                      // every field but the hook
  static StaticOracleRequest from_json(const nlohmann::json& j);
};

struct StaticOracleSolve {
  int step = 0;
  StaticSolution solution;
};

struct StaticOracleHead {
  int layer = 0, head = 0, k = 0;
  std::vector<StaticOracleSolve> solves;
};

struct StaticOracleResult {
  std::string objective;
  std::string budget;                   // as given, resolved per head into k
  std::vector<StaticOracleHead> heads;  // layer-major, in the request's order
  // One JSON record per solve (what `--out` writes as JSON Lines).
  std::vector<nlohmann::json> records() const;
  // What `oracle static` shows (oracle_reports.cpp): per layer, its heads, solves, inexact solves
  // and the mean optimum at the last step.
  Report report(const std::string& trace) const;
};

StaticOracleResult run_static_oracle(const Trace& trace, const StaticOracleRequest& request);

}  // namespace kvo
