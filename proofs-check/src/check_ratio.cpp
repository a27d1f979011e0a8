// C15: Theorem 4.4's conclusion at beta = 0 for every policy: rho_i = A_i(S_i) / top-k_i from
// s0 = max(k, P - 1) on, and the alpha it needs; the per-step series feed the report's plots.
#include <algorithm>
#include <cmath>

#include "kvo/oracle/offline_oracle.hpp"
#include "trajectory.hpp"

namespace kvo::detail {

void check_ratio(const HeadData& h, const Trajectory& traj, const TraceChecksOptions& o, std::vector<CheckRecord>& out,
                 HeadExtras& extras) {
  const int n = h.n, s0 = traj.s0;
  const std::vector<double>& optA = traj.optA;
  // C15: rho_i = A_i(S_i) / top-k_i for every policy; alpha_hat and the hypotheses separately.
  for (const auto& run : h.runs) {
    std::vector<double> rho(static_cast<size_t>(n), NAN);
    double mn = 1.0;
    long at = -1;
    for (int i = s0; i < n; ++i) {
      const double v = sum_over(h.acc, i, run.replay.steps[static_cast<size_t>(i)].kept);
      const double r = optA[static_cast<size_t>(i)] > 0 ? v / optA[static_cast<size_t>(i)] : 1.0;
      rho[static_cast<size_t>(i)] = r;
      if (r < mn) mn = r, at = i;
    }
    extras.rho[run.name] = rho;
    extras.rho_min[run.name] = mn;
    if (!check_enabled(o, "C15")) continue;
    // Conclusion at beta = 0: rho_i >= (1 - alpha)(1 - 1/e); alpha_hat is the alpha it needs.
    const double alpha = std::max(0.0, 1.0 - mn / kLine);
    auto r = head_record(h, "C15", run.name, ClaimKind::Finding, alpha == 0.0, alpha, at);
    r.detail = {{"rho_min", mn}, {"alpha_hat", alpha}, {"conclusion_holds_with_alpha_below_1", mn > 0}};
    out.push_back(std::move(r));
  }
}

}  // namespace kvo::detail
