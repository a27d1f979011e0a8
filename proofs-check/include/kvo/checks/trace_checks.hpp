// The claim checks on a trace (theory note §4, C1-C27, and the defects D1-D11): per (layer, head)
// the policies are replayed and every check runs on the dense attention and the realised caches;
// the loss/Hessian checks run on key matrices of the trace and on random data. Output: a Report
// plus the series the report's plots are drawn from.
#pragma once
#include <string>
#include <vector>

#include "kvo/checks/check_options.hpp"
#include "kvo/checks/report.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

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

long work_units(const Trace& trace, const TraceChecksOptions& o);
TraceChecksResult run_trace_checks(const Trace& trace, const TraceChecksOptions& o);

}  // namespace kvo
