// C19: the offline optimum of the nested problem (column generation, certified) orders every nested
// policy: value <= OPT_dyn <= sum_i opt_i, and the flow equals brute force on a small prefix;
// D10: how far the D.27 benchmark sum_i opt_i (unreachable caches allowed) sits above OPT_dyn.
// Both on the first min(n, offline_tokens) steps (detail offline_steps when that is fewer than n).
#include <algorithm>
#include <cmath>
#include <optional>

#include "head_data.hpp"
#include "kvo/oracle/competitive.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_streaming.hpp"

namespace kvo::detail {

namespace {

// Collects each budgeted run's caches on the first m = min(n, o.offline_tokens) steps; once the
// pass is over, solves the offline problem there by column generation on the head's attention rows,
// recomputed (never an m x m matrix).
class OfflineCheck final : public StepCheck {
 public:
  OfflineCheck(const HeadInfo& h, const TraceChecksOptions& o) : h_(h), o_(o), m_(offline_steps(h, o)) {
    if (!check_enabled(o, "C19") && !check_enabled(o, "D10")) return;
    enabled_ = true;
    for (const RunInfo& ri : h.runs)
      if (policy_traits(ri.id).budgeted) runs_.push_back({ri.name, ri.nested, {}, {}});
  }

  void step(const HeadStep& s) override {
    if (!enabled_ || s.i >= m_) return;
    size_t x = 0;
    for (size_t r = 0; r < h_.runs.size(); ++r)
      if (policy_traits(h_.runs[r].id).budgeted) runs_[x++].kept.push_back(s.runs[r].cur->kept);
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras& extras) override {
    if (!enabled_) return;
    const AttentionWeightRows head(*h_.view);
    const PrefixWeightRows rows(head, m_);
    const int budget = std::min(h_.k(), m_);
    StreamingOfflineOptions so;
    so.evaluate = false;  // the ordering's pass over the rows evaluates the schedule with its certificate
    extras.opt_dyn =
        check_offline_solution(h_, rows, budget, solve_offline_streaming(rows, budget, 0, so), runs_, o_, out);
  }

 private:
  const HeadInfo& h_;
  const TraceChecksOptions& o_;
  int m_;
  bool enabled_ = false;  // C19 or D10 asked for
  std::vector<ScheduleRun> runs_;
};

}  // namespace

std::unique_ptr<StepCheck> offline_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<OfflineCheck>(h, o);
}

double check_offline_solution(const HeadInfo& h, const WeightRows& w, int budget, const OfflineSolution& opt,
                              const std::vector<ScheduleRun>& runs, const TraceChecksOptions& o,
                              std::vector<CheckRecord>& out) {
  const OfflineOrdering ord = order_against_optimum(w, budget, 0, opt, runs);
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
    const int m = std::min(10, w.n());
    small.w = Eigen::MatrixXd::Zero(m, m);
    std::vector<double> row(static_cast<size_t>(m));
    for (int i = 0; i < m; ++i) {
      w.row(i, std::span<double>(row.data(), static_cast<size_t>(i) + 1));
      for (int j = 0; j <= i; ++j) small.w(i, j) = row[static_cast<size_t>(j)];
    }
    small.budget = std::min(3, m);
    const double flow = solve_offline(small).value, brute = solve_offline_brute(small).value;
    if (std::fabs(flow - brute) > 1e-9 * (1.0 + brute)) violations.push_back("flow != brute force on the prefix");
    auto r = head_record(h, "C19", "retained mass", ClaimKind::Theorem, violations.empty(), worst);
    r.detail = {{"opt_dyn", ord.opt},           {"dual_bound", ord.certificate}, {"static_sum", ord.static_sum},
                {"competitive_ratios", ratios}, {"violations", violations},      {"small_flow", flow},
                {"small_brute", brute}};
    if (w.n() < h.n) r.detail["offline_steps"] = w.n();
    if (!outside.empty()) r.detail["outside_problem"] = outside;
    out.push_back(std::move(r));
  }
  if (check_enabled(o, "D10")) {
    const double ratio = ord.static_sum > 0 ? ord.opt / ord.static_sum : 1.0;
    auto r = head_record(h, "D10", "retained mass", ClaimKind::Defect, ratio >= 1.0 - 1e-12, ratio);
    r.detail = {{"opt_dyn", ord.opt}, {"static_sum", ord.static_sum}};
    if (w.n() < h.n) r.detail["offline_steps"] = w.n();
    out.push_back(std::move(r));
  }
  return ord.opt;
}

}  // namespace kvo::detail
