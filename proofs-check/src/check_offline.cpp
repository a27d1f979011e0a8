// C19: the offline optimum of the nested problem (min-cost flow, certified) orders every nested
// policy: value <= OPT_dyn <= sum_i opt_i, and the flow equals brute force on a small prefix;
// D10: how far the D.27 benchmark sum_i opt_i (unreachable caches allowed) sits above OPT_dyn.
#include <algorithm>
#include <cmath>

#include "head_data.hpp"
#include "kvo/checks/competitive.hpp"
#include "kvo/oracle/offline_oracle.hpp"

namespace kvo::detail {

void check_offline(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out) {
  if (!check_enabled(o, "C19") && !check_enabled(o, "D10")) return;
  OfflineProblem p;
  p.w = h.a;
  p.budget = h.k();
  const OfflineSolution opt = solve_offline(p);
  std::vector<ScheduleRun> runs;
  for (const auto& run : h.runs)
    if (policy_traits(run.id).budgeted) runs.push_back({run.name, run.nested, run.replay.kept_sets()});
  check_offline_solution(h, p, opt, runs, o, out);
}

void check_offline_solution(const HeadData& h, const OfflineProblem& p, const OfflineSolution& opt,
                            const std::vector<ScheduleRun>& runs, const TraceChecksOptions& o,
                            std::vector<CheckRecord>& out) {
  const OfflineOrdering ord = order_against_optimum(p, opt, runs);
  if (check_enabled(o, "C19")) {
    std::vector<std::string> violations = ord.violations;
    double worst = 1.0;
    nlohmann::json ratios = nlohmann::json::object(), outside = nlohmann::json::object();
    for (const PolicyRatio& pr : ord.policies) {
      ratios[pr.policy] = pr.ratio;
      if (pr.nested && !pr.outside.empty()) outside[pr.policy] = pr.outside;
      if (pr.nested) worst = std::min(worst, pr.ratio);
    }
    // Flow = brute force on the first 10 tokens with k = 3.
    OfflineProblem small;
    const int m = std::min(10, h.n);
    small.w = h.a.topLeftCorner(m, m);
    small.budget = std::min(3, m);
    const double flow = solve_offline(small).value, brute = solve_offline_brute(small).value;
    if (std::fabs(flow - brute) > 1e-9 * (1.0 + brute)) violations.push_back("flow != brute force on the prefix");
    auto r = head_record(h, "C19", "retained mass", ClaimKind::Theorem, violations.empty(), worst);
    r.detail = {{"opt_dyn", ord.opt},           {"dual_bound", ord.certificate}, {"static_sum", ord.static_sum},
                {"competitive_ratios", ratios}, {"violations", violations},      {"small_flow", flow},
                {"small_brute", brute}};
    if (!outside.empty()) r.detail["outside_problem"] = outside;
    out.push_back(std::move(r));
  }
  if (check_enabled(o, "D10")) {
    const double ratio = ord.static_sum > 0 ? ord.opt / ord.static_sum : 1.0;
    auto r = head_record(h, "D10", "retained mass", ClaimKind::Defect, ratio >= 1.0 - 1e-12, ratio);
    r.detail = {{"opt_dyn", ord.opt}, {"static_sum", ord.static_sum}};
    out.push_back(std::move(r));
  }
}

}  // namespace kvo::detail
