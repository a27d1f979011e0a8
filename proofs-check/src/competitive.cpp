#include "kvo/checks/competitive.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "head_data.hpp"
#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/oracle/dynamic_oracle.hpp"

namespace kvo {

std::string outside_problem(const std::vector<std::vector<int>>& kept, bool nested, int k, int r) {
  if (!nested) return "re-enters evicted tokens";
  for (size_t i = 0; i < kept.size(); ++i) {
    const auto& s = kept[i];
    if (static_cast<int>(s.size()) > k)
      return "holds " + std::to_string(s.size()) + " > k tokens at step " + std::to_string(i);
    for (int j = std::max(0, static_cast<int>(i) - r + 1); j <= static_cast<int>(i); ++j)
      if (!std::binary_search(s.begin(), s.end(), j))
        return "drops token " + std::to_string(j) + " of the forced window at step " + std::to_string(i);
  }
  return "";
}

std::vector<HeadCompetitive> competitive_ratios(const Trace& trace, const CompetitiveOptions& o) {
  require(!o.policies.empty(), "competitive ratios need at least one policy");
  std::vector<ReplayResult> replays;
  for (ReplayOptions ro : o.policies) {
    ro.record_sets = true;
    ro.threads = o.threads;
    replays.push_back(replay(trace, ro));
  }
  const auto& heads = replays.front().heads;
  std::vector<HeadCompetitive> out(heads.size());
  parallel_for(static_cast<int>(heads.size()), o.threads, [&](int x) {
    HeadCompetitive& hc = out[static_cast<size_t>(x)];
    hc.layer = heads[static_cast<size_t>(x)].layer;
    hc.head = heads[static_cast<size_t>(x)].head;
    hc.k = heads[static_cast<size_t>(x)].budget.total;
    DynamicProblem p;
    p.w = dense_attention(HeadView(trace, hc.layer, hc.head));
    p.budget = hc.k;
    p.recent = std::min(o.forced_window, hc.k);
    const DynamicSolution opt = solve_dynamic(p);
    hc.opt_dyn = opt.value;
    hc.dual_bound = opt.upper;
    for (double v : detail::topk_row_sums(p.w, p.n(), hc.k)) hc.static_sum += v;
    const double tol = 1e-9 * std::max(1.0, hc.static_sum);
    if (std::fabs(opt.upper - opt.value) > tol)
      hc.violations.push_back("certificate gap " + std::to_string(opt.upper - opt.value));
    if (opt.value > hc.static_sum + tol) hc.violations.push_back("OPT_dyn exceeds the sum of static optima");
    for (const auto& r : replays) {
      const HeadReplay& hr = r.heads[static_cast<size_t>(x)];
      std::vector<std::vector<int>> kept;
      kept.reserve(hr.steps.size());
      for (const auto& s : hr.steps) kept.push_back(s.kept);
      PolicyRatio pr{r.policy, r.nested, schedule_value(p, kept), 0.0, outside_problem(kept, r.nested, hc.k, p.recent)};
      pr.ratio = hc.opt_dyn > 0 ? pr.value / hc.opt_dyn : 1.0;
      if (pr.outside.empty() && pr.value > hc.opt_dyn + tol)
        hc.violations.push_back("nested policy " + r.policy + " beats OPT_dyn by " +
                                std::to_string(pr.value - hc.opt_dyn));
      hc.policies.push_back(pr);
    }
    if (o.on_head_done) o.on_head_done();
  });
  return out;
}

}  // namespace kvo
