#include "kvo/checks/static_greedy_check.hpp"

#include <algorithm>
#include <cmath>

#include "kvo/core/attention.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/oracle/static_oracle.hpp"

namespace kvo {

std::vector<StaticGreedySample> static_greedy_check(const Trace& trace, const ReplayResult& replay,
                                                    const StaticGreedyOptions& o) {
  std::vector<std::vector<StaticGreedySample>> per_head(replay.heads.size());
  parallel_for(static_cast<int>(replay.heads.size()), o.threads, [&](int x) {
    const HeadReplay& hr = replay.heads[x];
    const HeadView view(trace, hr.layer, hr.head);
    const Eigen::MatrixXd a = dense_attention(view);
    const int n = view.n();
    for (int s = 1; s <= o.samples_per_head; ++s) {
      const int i = static_cast<int>(static_cast<long long>(n - 1) * s / o.samples_per_head);
      const auto& att = hr.steps[static_cast<size_t>(i)].attended;
      if (att.empty()) continue;
      const size_t g = std::min(att.size(), static_cast<size_t>(o.max_ground));
      const std::vector<int> ground(att.end() - static_cast<long>(g), att.end());
      const int first = std::max(0, i - o.window + 1);
      Eigen::MatrixXd sim(i - first + 1, static_cast<long>(g));
      for (int r = first; r <= i; ++r)
        for (size_t c = 0; c < g; ++c) sim(r - first, static_cast<long>(c)) = a(r, ground[c]);
      const FacilityLocation f(sim);
      const int k = std::min(o.budget, static_cast<int>(g));
      GreedyOptions go;
      go.budget = k;
      const GreedyResult gr = lazy_greedy(f, go);
      const StaticSolution opt = solve_static(f, k);
      StaticGreedySample smp;
      smp.layer = hr.layer;
      smp.head = hr.head;
      smp.step = i;
      smp.ground = static_cast<int>(g);
      smp.k = k;
      smp.greedy = gr.value;
      smp.opt = opt.value;
      smp.bound = gr.upper_bound;
      smp.factor = nwf_factor(k);
      smp.exact = opt.exact;
      const double tol = 1e-9 * std::max(1.0, std::fabs(opt.value));
      smp.holds =
          gr.value >= smp.factor * opt.value - tol && gr.upper_bound >= opt.value - tol && opt.value >= gr.value - tol;
      per_head[x].push_back(smp);
    }
  });
  std::vector<StaticGreedySample> out;
  for (auto& v : per_head) out.insert(out.end(), v.begin(), v.end());
  return out;
}

}  // namespace kvo
