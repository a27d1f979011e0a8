// Competitive ratios against the exact offline optimum of the nested problem (docs/theory.md §3.6,
// claim 19): per head, OPT_dyn (min-cost flow, with its dual certificate), the sum of per-step
// static optima, and each policy's value sum_i a_i(S_i) and ratio value / OPT_dyn. The ordering
// policy <= OPT_dyn <= sum_i opt_i must hold for every policy whose schedule lies in OPT_dyn's
// feasible set: nested, at most k tokens after every step (a prefill holds more), and, with a
// forced window r, the last r tokens always kept. A violation there is a kvoracle bug; the others
// (h2o-mask, prefill, policies without the window) may exceed OPT_dyn and are reported as such.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kvo/core/replay.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/weight_rows.hpp"

namespace kvo {

struct PolicyRatio {
  std::string policy;
  bool nested = true;
  double value = 0.0;   // sum_i sum_{j in S_i} a(i, j)
  double ratio = 0.0;   // value / OPT_dyn
  std::string outside;  // why the ordering does not apply ("" when it is checked)
};

// One schedule to order against the optimum: a policy's kept sets S_i (ascending), or, for a
// nested schedule, each token's last kept step (j - 1: never kept), in O(n) instead of O(n k).
struct ScheduleRun {
  std::string policy;
  bool nested = true;
  std::vector<std::vector<int>> kept;
  std::vector<int> end;  // used when `kept` is empty
};

// The run with its kept sets replaced by end times when every token is kept over one interval
// starting at its own step (always so for a nested policy); otherwise unchanged.
ScheduleRun compact_run(ScheduleRun run);

// Why a schedule over n steps lies outside the feasible set of the problem (budget k, forced
// window r), or "" when it lies inside: "re-enters evicted tokens", "holds N > k tokens at step i",
// "drops token j of the forced window at step i".
std::string outside_problem(const ScheduleRun& run, int n, int k, int r);

// C19 on one head: the dual bound re-derived from the solution's end times and prices (the
// solver's own upper bound is not trusted), OPT_dyn <= sum_i opt_i, and policy <= OPT_dyn for each
// schedule inside the problem. A failure is a kvoracle bug; `violations` says which.
struct OfflineOrdering {
  double opt = 0.0, certificate = 0.0, static_sum = 0.0;
  std::vector<PolicyRatio> policies;    // in the order of `runs`
  std::vector<std::string> violations;  // ordering or certificate failures
};
// One pass over the rows of w (never the matrix); the dense form reads p.w's rows. A solution whose
// value is NaN (solved with StreamingOfflineOptions::evaluate = false) is evaluated by that pass:
// opt is then the schedule's value from the same sums the certificate uses.
OfflineOrdering order_against_optimum(const WeightRows& w, int budget, int recent, const OfflineSolution& opt,
                                      const std::vector<ScheduleRun>& runs);
OfflineOrdering order_against_optimum(const OfflineProblem& p, const OfflineSolution& opt,
                                      const std::vector<ScheduleRun>& runs);

struct HeadCompetitive {
  int layer = 0, head = 0, k = 0;
  double opt_dyn = 0.0, dual_bound = 0.0, static_sum = 0.0;
  std::vector<PolicyRatio> policies;
  std::vector<std::string> violations;  // ordering or certificate failures (bugs)
};

struct CompetitiveOptions {
  std::vector<ReplayOptions> policies;  // one replay per policy (record_sets is forced on)
  int forced_window = 0;                // r forced into OPT_dyn's caches (0: the paper's problem)
  int threads = 0;
  std::function<void()> on_head_done;
};

// The work as independent units (replay units of the first policy: a query head each under
// --gqa query), every policy replayed on the unit with the unit's seed and the unit's heads solved:
// what `kvoracle oracle --offline` spreads over MPI ranks. competitive_ratios() runs every unit on
// threads (on_head_done after each unit), then assemble() (heads by layer, head).
class CompetitivePlan final : public WorkPlan<std::vector<HeadCompetitive>> {
 public:
  CompetitivePlan(const Trace& trace, CompetitiveOptions options);  // the trace must outlive it
  int size() const override;
  std::string name(int unit) const override;
  std::vector<HeadCompetitive> run(int unit) const;
  std::vector<HeadCompetitive> assemble(std::vector<std::vector<HeadCompetitive>> units) const;
  // The work-plan form: a unit's heads as bytes (encode_competitive), and the result from them.
  std::string run_bytes(int unit) const override;
  std::vector<HeadCompetitive> assemble_bytes(const std::vector<std::string>& units) const override;

 private:
  const Trace& trace_;
  CompetitiveOptions o_;
  std::vector<ReplayPlan> plans_;  // one per policy
};

std::vector<HeadCompetitive> competitive_ratios(const Trace& trace, const CompetitiveOptions& options);

// A unit's results as bytes (CBOR, every double bit for bit) and back; kvo::Error when malformed.
std::string encode_competitive(const std::vector<HeadCompetitive>& heads);
std::vector<HeadCompetitive> decode_competitive(const std::string& bytes);

}  // namespace kvo
