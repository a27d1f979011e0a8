#include "kvo/checks/competitive.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/oracle/offline_oracle.hpp"

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

OfflineOrdering order_against_optimum(const OfflineProblem& p, const OfflineSolution& opt,
                                      const std::vector<ScheduleRun>& runs) {
  OfflineOrdering o;
  o.opt = opt.value;
  for (double v : top_k_row_sums(p.w, p.budget)) o.static_sum += v;
  const double tol = 1e-9 * std::max(1.0, o.static_sum);
  try {
    o.certificate = dual_bound(p, opt.end, opt.price);
    if (std::fabs(o.certificate - opt.value) > tol)
      o.violations.push_back("certificate gap " + std::to_string(o.certificate - opt.value));
  } catch (const Error& e) {
    o.certificate = NAN;
    o.violations.push_back(std::string("invalid certificate: ") + e.what());
  }
  if (opt.value > o.static_sum + tol) o.violations.push_back("OPT_dyn > sum opt_i");
  for (const ScheduleRun& r : runs) {
    PolicyRatio pr{r.policy, r.nested, schedule_value(p, r.kept), 0.0,
                   outside_problem(r.kept, r.nested, p.budget, p.recent)};
    pr.ratio = opt.value > 0 ? pr.value / opt.value : 1.0;
    if (pr.outside.empty() && pr.value > opt.value + tol)
      o.violations.push_back(r.policy + " beats OPT_dyn by " + std::to_string(pr.value - opt.value));
    o.policies.push_back(std::move(pr));
  }
  return o;
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
    OfflineProblem p;
    p.w = dense_attention(HeadView(trace, hc.layer, hc.head));
    p.budget = hc.k;
    p.recent = std::min(o.forced_window, hc.k);
    std::vector<ScheduleRun> runs;
    for (const auto& r : replays) runs.push_back({r.policy, r.nested, r.heads[static_cast<size_t>(x)].kept_sets()});
    OfflineOrdering ord = order_against_optimum(p, solve_offline(p), runs);
    hc.opt_dyn = ord.opt;
    hc.dual_bound = ord.certificate;
    hc.static_sum = ord.static_sum;
    hc.policies = std::move(ord.policies);
    hc.violations = std::move(ord.violations);
    if (o.on_head_done) o.on_head_done();
  });
  return out;
}

}  // namespace kvo
