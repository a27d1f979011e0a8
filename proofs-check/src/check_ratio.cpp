// C15: Theorem 4.4's conclusion at beta = 0 for every policy: rho_i = A_i(S_i) / top-k_i from
// s0 = max(k, P - 1) on, and the alpha it needs; the per-step series feed the report's plots.
#include <algorithm>
#include <cmath>

#include "head_data.hpp"

namespace kvo::detail {
namespace {

class RatioCheck final : public StepCheck {
 public:
  RatioCheck(const HeadInfo& h, const TraceChecksOptions& o) : h_(h), o_(o) {}

  void finish(const HeadSeries& series, std::vector<CheckRecord>& out, HeadExtras& extras) override {
    const int n = h_.n, s0 = pressure_step(h_);
    const std::vector<double>& optA = series.top_acc;
    for (size_t x = 0; x < h_.runs.size(); ++x) {
      const RunInfo& run = h_.runs[x];
      std::vector<double> rho(static_cast<size_t>(n), NAN);
      double mn = 1.0;
      long at = -1;
      for (int i = s0; i < n; ++i) {
        const double v = series.runs[x].v_acc[static_cast<size_t>(i)];
        const double r = optA[static_cast<size_t>(i)] > 0 ? v / optA[static_cast<size_t>(i)] : 1.0;
        rho[static_cast<size_t>(i)] = r;
        if (r < mn) mn = r, at = i;
      }
      extras.rho[run.name] = rho;
      extras.rho_min[run.name] = mn;
      if (!check_enabled(o_, "C15")) continue;
      // Conclusion at beta = 0: rho_i >= (1 - alpha)(1 - 1/e); alpha_hat is the alpha it needs.
      const double alpha = std::max(0.0, 1.0 - mn / kLine);
      auto r = head_record(h_, "C15", run.name, ClaimKind::Finding, alpha == 0.0, alpha, at);
      r.detail = {{"rho_min", mn}, {"alpha_hat", alpha}, {"conclusion_holds_with_alpha_below_1", mn > 0}};
      out.push_back(std::move(r));
    }
  }

 private:
  const HeadInfo& h_;
  const TraceChecksOptions& o_;
};

}  // namespace

std::unique_ptr<StepCheck> ratio_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<RatioCheck>(h, o);
}

}  // namespace kvo::detail
