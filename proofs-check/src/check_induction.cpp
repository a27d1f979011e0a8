// Lemma D.29's induction chain (C13, with the defects D7 link (a) and D8 the base case) for each
// run and instantiation, and Lemma D.30's approximate induction with f = A, f~ = C (C14, D6 the
// one-sided eps0 as published). Everything here reads the per-step series of the pass.
#include <algorithm>
#include <cmath>

#include "head_data.hpp"

namespace kvo::detail {
namespace {

class InductionCheck final : public StepCheck {
 public:
  InductionCheck(const HeadInfo& h, const TraceChecksOptions& o) : h_(h), o_(o) {}

  void finish(const HeadSeries& series, std::vector<CheckRecord>& out, HeadExtras&) override {
    const int n = h_.n;
    const int paper_index = h_.run_index(PolicyId::H2OPaper);
    const std::vector<double>& optA = series.top_acc;
    // C13 / D7 / D8: the induction chain of Lemma D.29 per (run, instantiation), h = id.
    for (size_t x = 0; x < h_.runs.size(); ++x) {
      const RunInfo& run = h_.runs[x];
      const RunSeries& rs = series.runs[x];
      const bool has_c = !rs.v_score.empty();
      for (const char* inst : {"A", "C"}) {
        const std::string name = inst;
        if (name == "C" && !has_c) continue;
        if (name == "A" && run.id != PolicyId::H2OPaper && run.id != PolicyId::H2O) continue;
        const bool a = name == "A";
        const std::vector<double>& v_at = a ? rs.v_acc : rs.v_score;
        const std::vector<double>& now_at = a ? rs.now_acc : rs.now_score;
        const std::vector<double>& opt = a ? optA : rs.top_score;
        const int i0 = base_step(rs, h_.prompt_len);
        if (i0 < 0 || i0 + 1 >= n) continue;
        const Gamma g = gammas(opt, i0);
        long link_a = 0, bound_fail = 0, steps = 0, first = -1;
        double c = 0.0, base = 0.0, rho_min = 1.0;
        for (int i = i0; i + 1 < n; ++i) {
          const double v = v_at[static_cast<size_t>(i)];
          const double opt_next = opt[static_cast<size_t>(i + 1)];
          if (i == i0) {
            c = base = opt_next > 0 ? v / opt_next : 1.0;
          } else {
            const double before = v_at[static_cast<size_t>(i - 1)], now = now_at[static_cast<size_t>(i)];
            const double theta = before > 0 ? std::max(0.0, 1.0 - now / before) : 0.0;
            c *= (1.0 - theta) * (1.0 - g.proof_at[static_cast<size_t>(i)]);
            ++steps;
            if (v < now - 1e-12 * (1.0 + std::fabs(now))) {  // link (a): f_i(S_i) >= f_i(S_{i-1})
              ++link_a;
              if (first < 0) first = i;
            }
            if (v < c * opt_next * (1.0 - 1e-12)) ++bound_fail;
          }
          if (opt_next > 0) rho_min = std::min(rho_min, v / opt_next);
        }
        const bool theorem = run.id == PolicyId::H2OPaper && name == "C";
        const std::string variant = run.name + " " + name + "[id]";
        if (check_enabled(o_, "C13")) {
          auto r = head_record(h_, "C13", variant, theorem ? ClaimKind::Theorem : ClaimKind::Finding,
                               link_a == 0 && bound_fail == 0, static_cast<double>(link_a + bound_fail), first);
          r.detail = {{"steps", steps},    {"link_a_failures", link_a}, {"bound_failures", bound_fail},
                      {"base_step", i0},   {"base_ratio", base},        {"final_factor", c},
                      {"rho_min", rho_min}};
          out.push_back(std::move(r));
        }
        if (check_enabled(o_, "D7") && name == "C") {
          const double rate = steps ? static_cast<double>(link_a) / static_cast<double>(steps) : 0.0;
          auto r = head_record(h_, "D7", run.name, ClaimKind::Defect, link_a == 0, rate, first);
          r.detail = {{"link_a_failures", link_a}, {"steps", steps}};
          out.push_back(std::move(r));
        }
        if (check_enabled(o_, "D8") && run.id == PolicyId::H2OPaper) {
          auto r = head_record(h_, "D8", run.name + " " + name + "[id]", ClaimKind::Defect, base >= kLine, base, i0);
          r.detail = {{"base_step", i0}, {"line", kLine}};
          out.push_back(std::move(r));
        }
      }
    }

    // C14 / D6: f = A, f~ = C along the paper-exact trajectory (decisions made by f~).
    if (paper_index < 0 || series.runs[static_cast<size_t>(paper_index)].v_score.empty()) return;
    if (!check_enabled(o_, "C14") && !check_enabled(o_, "D6")) return;
    const RunSeries& paper = series.runs[static_cast<size_t>(paper_index)];
    const int i0 = base_step(paper, h_.prompt_len);
    if (i0 < 0 || i0 + 1 >= n) return;
    double ep = 0.0, em = 0.0;
    for (int i = i0; i < n; ++i) {
      const double f = paper.v_acc[static_cast<size_t>(i)], ft = paper.v_score[static_cast<size_t>(i)];
      ep = std::max(ep, ft - f);
      em = std::max(em, f - ft);
    }
    const Gamma g = gammas(optA, i0);
    double c = 0.0;
    long two_fail = 0, one_fail = 0, first_one = -1;
    double shortfall = 0.0;
    for (int i = i0; i + 1 < n; ++i) {
      const double v = paper.v_acc[static_cast<size_t>(i)], opt_next = optA[static_cast<size_t>(i + 1)];
      if (i == i0) {
        c = opt_next > 0 ? v / opt_next : 1.0;
        continue;
      }
      const double before = paper.v_score[static_cast<size_t>(i - 1)], now = paper.now_score[static_cast<size_t>(i)];
      const double theta_t = before > 0 ? std::max(0.0, 1.0 - now / before) : 0.0;
      c *= (1.0 - theta_t) * (1.0 - g.proof_at[static_cast<size_t>(i)]);
      const double steps_in = static_cast<double>(i - i0);
      const double two = c * opt_next - steps_in * (ep + em), one = c * opt_next - steps_in * ep;
      const double tol = 1e-9 * (1.0 + std::fabs(v));
      if (v < two - tol) ++two_fail;
      if (v < one - tol) {
        ++one_fail;
        if (first_one < 0) first_one = i;
        shortfall = std::max(shortfall, (one - v) / std::max(opt_next, 1e-300));
      }
    }
    if (check_enabled(o_, "C14")) {
      auto r = head_record(h_, "C14", "f=A f~=C (h2o-paper)", ClaimKind::Theorem, two_fail == 0,
                           static_cast<double>(one_fail), first_one);
      r.detail = {{"eps_plus", ep},
                  {"eps_minus", em},
                  {"two_sided_failures", two_fail},
                  {"one_sided_failures", one_fail},
                  {"base_step", i0}};
      out.push_back(std::move(r));
    }
    if (check_enabled(o_, "D6")) {
      auto r = head_record(h_, "D6", "trace f=A f~=C", ClaimKind::Defect, one_fail == 0, shortfall, first_one);
      r.detail = {{"eps_plus", ep}, {"eps_minus", em}, {"one_sided_failures", one_fail}};
      out.push_back(std::move(r));
    }
  }

 private:
  const HeadInfo& h_;
  const TraceChecksOptions& o_;
};

}  // namespace

std::unique_ptr<StepCheck> induction_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<InductionCheck>(h, o);
}

}  // namespace kvo::detail
