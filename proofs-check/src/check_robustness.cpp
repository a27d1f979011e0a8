// C9: robustness of each eviction of h2o-paper to a perturbed objective (Lemma D.19), f = A and
// f~ = C (the run's own decision) or fp16(C) (what fp16 scores would evict), h = id.
#include <algorithm>
#include <cmath>

#include "kvo/core/safetensors.hpp"
#include "trajectory.hpp"

namespace kvo::detail {

void check_robustness(const HeadData& h, const Trajectory& traj, const TraceChecksOptions& o,
                      std::vector<CheckRecord>& out) {
  const int n = h.n;
  const PolicyRun* paper = traj.paper;
  // C9: robustness of the eviction step to a perturbed objective (Lemma D.19), f = A, h = id.
  if (paper && paper->scores.size() && check_enabled(o, "C9")) {
    for (const char* pert : {"C", "fp16(C)"}) {
      const bool half = std::string(pert) == "fp16(C)";
      double worst_eps = 0.0;
      long fails = 0, first = -1, at = -1;
      for (int i = std::max(h.prompt_len, 0); i < n; ++i) {
        const auto& s = paper->replay.steps[static_cast<size_t>(i)];
        if (s.evicted.size() != 1) continue;
        const auto& G = s.attended;
        double fa = 0.0, ft = 0.0;
        for (int j : G) {
          fa += h.acc(i, j);
          ft += half ? static_cast<double>(half_to_float(float_to_half(static_cast<float>(paper->scores(i, j)))))
                     : paper->scores(i, j);
        }
        // X_v = G \ {v}; S = G \ {i}: differences of modular functions are weight differences.
        auto wt = [&](int j) {
          return half ? static_cast<double>(half_to_float(float_to_half(static_cast<float>(paper->scores(i, j)))))
                      : paper->scores(i, j);
        };
        double delta = 0.0, best_f = -INFINITY, best_ft = -INFINITY;
        int pick = -1;
        for (int v : G) {
          const double df = h.acc(i, i) - h.acc(i, v), dft = wt(i) - wt(v);
          delta = std::max(delta, std::fabs(dft - df));
          best_f = std::max(best_f, fa - h.acc(i, v));
          if (ft - wt(v) > best_ft) best_ft = ft - wt(v), pick = v;  // ties: the oldest
        }
        const double eps_hat = 2.0 * n * delta;
        // The run's own decision for f~ = C (a policy that does not evict the argmin fails);
        // what fp16 scores would have evicted for fp16(C).
        if (!half) pick = s.evicted.front();
        const double got = fa - h.acc(i, pick);
        if (got < kLine * best_f - eps_hat - 1e-9 * (1.0 + std::fabs(best_f))) {
          ++fails;
          if (first < 0) first = i;
        }
        const double rel = best_f > 0 ? eps_hat / best_f : 0.0;
        if (rel > worst_eps) worst_eps = rel, at = i;
      }
      auto r = head_record(h, "C9", std::string("f=A f~=") + pert, ClaimKind::Theorem, fails == 0, worst_eps,
                           fails ? first : at);
      r.detail = {{"failures", fails}, {"metric", "max eps_hat / opt_swap"}};
      out.push_back(std::move(r));
    }
  }
}

}  // namespace kvo::detail
