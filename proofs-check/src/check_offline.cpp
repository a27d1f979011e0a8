// C19: the offline optimum of the nested problem (min-cost flow, certified) orders every nested
// policy: value <= OPT_dyn <= sum_i opt_i, and the flow equals brute force on a small prefix;
// D10: how far the D.27 benchmark sum_i opt_i (unreachable caches allowed) sits above OPT_dyn.
#include <algorithm>
#include <cmath>

#include "head_data.hpp"
#include "kvo/checks/competitive.hpp"
#include "kvo/oracle/dynamic_oracle.hpp"

namespace kvo::detail {

void check_offline(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out) {
  if (!check_enabled(o, "C19") && !check_enabled(o, "D10")) return;
  DynamicProblem p;
  p.w = h.a;
  p.budget = h.k();
  const DynamicSolution opt = solve_dynamic(p);
  double static_sum = 0.0;
  for (double v : topk_row_sums(h.a, h.n, h.k())) static_sum += v;
  const double tol = 1e-9 * std::max(1.0, static_sum);
  const double certificate = dual_bound(p, opt.end, opt.price);
  if (check_enabled(o, "C19")) {
    std::vector<std::string> violations;
    if (std::fabs(certificate - opt.value) > tol) violations.push_back("certificate gap");
    if (opt.value > static_sum + tol) violations.push_back("OPT_dyn > sum opt_i");
    double worst = 1.0;
    nlohmann::json ratios = nlohmann::json::object(), outside = nlohmann::json::object();
    for (const auto& run : h.runs) {
      if (!policy_traits(run.id).budgeted) continue;  // not under the budget
      std::vector<std::vector<int>> kept;
      for (const auto& s : run.replay.steps) kept.push_back(s.kept);
      const double v = schedule_value(p, kept);
      const double ratio = opt.value > 0 ? v / opt.value : 1.0;
      ratios[run.name] = ratio;
      // The ordering holds for schedules in OPT_dyn's feasible set: a prefill holds more than k.
      const std::string why = outside_problem(kept, run.nested, p.budget, 0);
      if (run.nested && !why.empty()) outside[run.name] = why;
      if (why.empty() && v > opt.value + tol) violations.push_back(run.name + " beats OPT_dyn");
      if (run.nested) worst = std::min(worst, ratio);
    }
    // Flow = brute force on the first 10 tokens with k = 3.
    DynamicProblem small;
    const int m = std::min(10, h.n);
    small.w = h.a.topLeftCorner(m, m);
    small.budget = std::min(3, m);
    const double flow = solve_dynamic(small).value, brute = solve_dynamic_brute(small).value;
    if (std::fabs(flow - brute) > 1e-9 * (1.0 + brute)) violations.push_back("flow != brute force on the prefix");
    auto r = head_record(h, "C19", "retained mass", ClaimKind::Theorem, violations.empty(), worst);
    r.detail = {{"opt_dyn", opt.value},         {"dual_bound", certificate}, {"static_sum", static_sum},
                {"competitive_ratios", ratios}, {"violations", violations},  {"small_flow", flow},
                {"small_brute", brute}};
    if (!outside.empty()) r.detail["outside_problem"] = outside;
    out.push_back(std::move(r));
  }
  if (check_enabled(o, "D10")) {
    const double ratio = static_sum > 0 ? opt.value / static_sum : 1.0;
    auto r = head_record(h, "D10", "retained mass", ClaimKind::Defect, ratio >= 1.0 - 1e-12, ratio);
    r.detail = {{"opt_dyn", opt.value}, {"static_sum", static_sum}};
    out.push_back(std::move(r));
  }
}

}  // namespace kvo::detail
