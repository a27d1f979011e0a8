// The claim checks on a trace (docs/theory.md §4, C1-C27, the defects D1-D11 and other papers'
// claims): per (layer, head) the policies are replayed and every check runs on the dense attention
// and the realised caches; the loss/Hessian checks run on key matrices of the trace and on random
// data; Ada-KV's claims on the heads of each layer together. Output: a Report
// plus the series the report's plots are drawn from.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kvo/core/trace.hpp"
#include "kvo/core/work_plan.hpp"
#include "kvo/proofs_check/check_options.hpp"
#include "kvo/proofs_check/report.hpp"

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
  CheckRecords report;
  std::vector<PolicySeries> series;
  std::vector<SweepPoint> sweep;
  std::vector<HeadGrid> grids;
  std::string budget;  // as resolved text, e.g. "20%"
};

// verify's work on one trace as independent units: the checks of one (layer, head), one cell of the
// budget sweep, one loss/Hessian instance. run(u) returns a unit's results as bytes (CBOR, every
// double bit for bit) and assemble() builds the result from all of them in unit order, so the
// result is the same whichever threads, ranks or earlier runs (checkpoints) computed the units.
class TraceChecksPlan final : public WorkPlan<TraceChecksResult> {
 public:
  // Validates the options against the trace (kvo::Error naming the first problem) and refuses a run
  // whose memory estimate exceeds the limit (kvo/core/memory_limit.hpp).
  TraceChecksPlan(const Trace& trace, TraceChecksOptions o);
  int size() const override;
  std::string name(
      int unit) const override;          // "layer 3 head 5", "sweep layer 0 head 0 budget 0.1", "Ada-KV layer 2", ...
  double cost(int unit) const override;  // relative cost, for largest-first scheduling
  std::string run(int unit) const;       // thread-safe; the trace must outlive the plan
  TraceChecksResult assemble(const std::vector<std::string>& results) const;
  std::string run_bytes(int unit) const override { return run(unit); }
  TraceChecksResult assemble_bytes(const std::vector<std::string>& units) const override { return assemble(units); }
  const TraceChecksOptions& options() const { return o_; }

 private:
  enum class UnitKind { Head, Sweep, Loss, Layer };
  struct Unit {
    UnitKind kind;
    int index;
  };
  struct Lists;
  Unit unit(int u) const;
  const Trace& trace_;
  TraceChecksOptions o_;
  std::shared_ptr<const Lists> lists_;
};

long work_units(const Trace& trace, const TraceChecksOptions& o);  // TraceChecksPlan(trace, o).size()
// Every unit on o.threads threads (o.on_tick after each), then assemble().
TraceChecksResult run_trace_checks(const Trace& trace, const TraceChecksOptions& o);

}  // namespace kvo
