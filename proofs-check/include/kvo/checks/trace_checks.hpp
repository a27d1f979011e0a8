// The claim checks on a trace (theory note §4, C1-C27, and the defects D1-D11): per (layer, head)
// the policies are replayed and every check runs on the dense attention and the realised caches;
// the loss/Hessian checks run on key matrices of the trace and on random data. Output: a Report
// plus the series the report's plots are drawn from.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kvo/checks/report.hpp"
#include "kvo/core/run_config.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

struct TraceChecksOptions {
  // Budget, prompt, seed, layers and the policies' parameters (run.policy.id is set per policy);
  // one cache per query head (gqa must be query).
  RunConfig run;
  std::vector<PolicyId> policies = default_policies(PolicyListUse::Checks);
  std::set<std::string> checks;  // ids to run; empty: all
  int samples = 120;             // sampled sets per scan (C5, C6, C12)
  int sampled_steps = 2;         // steps per head for the small-ground checks (C6-C8, C16, C20-C22)
  int ground = 12;               // small ground set (most recent keys) for brute force
  int small_k = 4;
  std::vector<double> sweep = {0.05, 0.1, 0.2, 0.3, 0.5};  // budgets of the retained-mass plot
  int sweep_heads = 1;                                     // heads per layer in the sweep (head (layer + t) mod H)
  int loss_heads = 3;   // key matrices used as A in C23-C26 (first, middle, last layer)
  int loss_random = 8;  // random instances for C23-C26
  int threads = 0;
  std::function<void()> on_tick;  // progress: one tick per unit of work_units()
};

// Per-step series for the plots.
struct PolicySeries {
  std::string policy;              // the policy's name
  std::vector<double> rho_median;  // median over heads of rho_i = A_i(S_i) / top-k_i
  double alpha_hat = 0.0;          // max over heads of max(0, 1 - min rho / (1 - 1/e))
};
struct SweepPoint {
  std::string policy;  // policy name, "static optimum" or "OPT_dyn"
  double budget = 0.0;
  double retained_mass = 0.0;  // mean over heads and steps of a_i(S_i)
};
struct HeadGrid {  // layer x head values for the heat maps (NaN where not computed)
  std::string title;
  std::vector<std::vector<double>> value;
};

struct TraceChecksResult {
  Report report;
  std::vector<PolicySeries> series;
  std::vector<SweepPoint> sweep;
  std::vector<HeadGrid> grids;
  std::string budget;  // as resolved text, e.g. "20%"
};

bool check_enabled(const TraceChecksOptions& o, const std::string& id);
long work_units(const Trace& trace, const TraceChecksOptions& o);
TraceChecksResult run_trace_checks(const Trace& trace, const TraceChecksOptions& o);

}  // namespace kvo
