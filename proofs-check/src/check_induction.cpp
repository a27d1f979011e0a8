// Lemma D.29's induction chain (C13, with the defects D7 link (a) and D8 the base case) for each
// run and instantiation, and Lemma D.30's approximate induction with f = A, f~ = C (C14, D6 the
// one-sided eps0 as published).
#include <algorithm>
#include <cmath>

#include "kvo/oracle/offline_oracle.hpp"
#include "trajectory.hpp"

namespace kvo::detail {

void check_induction(const HeadData& h, const Trajectory& traj, const TraceChecksOptions& o,
                     std::vector<CheckRecord>& out) {
  const int n = h.n, k = h.k();
  const std::vector<double>&optA = traj.optA, &optC = traj.optC;
  const PolicyRun* paper = traj.paper;
  // C13 / D7 / D8: the induction chain of Lemma D.29 per (run, instantiation), h = id.
  for (const auto& run : h.runs) {
    const bool has_c = run.scores.size() > 0;
    for (const char* inst : {"A", "C"}) {
      const std::string name = inst;
      if (name == "C" && !has_c) continue;
      if (name == "A" && run.id != PolicyId::H2OPaper && run.id != PolicyId::H2O) continue;
      const Eigen::MatrixXd& w = name == "A" ? h.acc : run.scores;
      const std::vector<double> opt = name == "A"                      ? optA
                                      : &run == paper && !optC.empty() ? optC
                                                                       : top_k_row_sums(run.scores, k);
      const int i0 = base_step(run, h.prompt_len);
      if (i0 < 0 || i0 + 1 >= n) continue;
      const Gamma g = gammas(opt, i0);
      long link_a = 0, bound_fail = 0, steps = 0, first = -1;
      double c = 0.0, base = 0.0, rho_min = 1.0;
      for (int i = i0; i + 1 < n; ++i) {
        const auto& cur = run.replay.steps[static_cast<size_t>(i)];
        const auto& prev = run.replay.steps[static_cast<size_t>(i - 1)];
        const double v = sum_over(w, i, cur.kept);
        const double opt_next = opt[static_cast<size_t>(i + 1)];
        if (i == i0) {
          c = base = opt_next > 0 ? v / opt_next : 1.0;
        } else {
          const double before = sum_over(w, i - 1, prev.kept), now = sum_over(w, i, prev.kept);
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
      if (check_enabled(o, "C13")) {
        auto r = head_record(h, "C13", variant, theorem ? ClaimKind::Theorem : ClaimKind::Finding,
                             link_a == 0 && bound_fail == 0, static_cast<double>(link_a + bound_fail), first);
        r.detail = {{"steps", steps},    {"link_a_failures", link_a}, {"bound_failures", bound_fail},
                    {"base_step", i0},   {"base_ratio", base},        {"final_factor", c},
                    {"rho_min", rho_min}};
        out.push_back(std::move(r));
      }
      if (check_enabled(o, "D7") && name == "C") {
        const double rate = steps ? static_cast<double>(link_a) / static_cast<double>(steps) : 0.0;
        auto r = head_record(h, "D7", run.name, ClaimKind::Defect, link_a == 0, rate, first);
        r.detail = {{"link_a_failures", link_a}, {"steps", steps}};
        out.push_back(std::move(r));
      }
      if (check_enabled(o, "D8") && run.id == PolicyId::H2OPaper) {
        auto r = head_record(h, "D8", run.name + " " + name + "[id]", ClaimKind::Defect, base >= kLine, base, i0);
        r.detail = {{"base_step", i0}, {"line", kLine}};
        out.push_back(std::move(r));
      }
    }
  }

  // C14 / D6: f = A, f~ = C along the paper-exact trajectory (decisions made by f~).
  if (paper && paper->scores.size() && (check_enabled(o, "C14") || check_enabled(o, "D6"))) {
    const int i0 = base_step(*paper, h.prompt_len);
    if (i0 >= 0 && i0 + 1 < n) {
      double ep = 0.0, em = 0.0;
      for (int i = i0; i < n; ++i) {
        const auto& kept = paper->replay.steps[static_cast<size_t>(i)].kept;
        const double f = sum_over(h.acc, i, kept), ft = sum_over(paper->scores, i, kept);
        ep = std::max(ep, ft - f);
        em = std::max(em, f - ft);
      }
      const Gamma g = gammas(optA, i0);
      double c = 0.0;
      long two_fail = 0, one_fail = 0, first_one = -1;
      double shortfall = 0.0;
      for (int i = i0; i + 1 < n; ++i) {
        const auto& cur = paper->replay.steps[static_cast<size_t>(i)];
        const auto& prev = paper->replay.steps[static_cast<size_t>(i - 1)];
        const double v = sum_over(h.acc, i, cur.kept), opt_next = optA[static_cast<size_t>(i + 1)];
        if (i == i0) {
          c = opt_next > 0 ? v / opt_next : 1.0;
          continue;
        }
        const double before = sum_over(paper->scores, i - 1, prev.kept), now = sum_over(paper->scores, i, prev.kept);
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
      if (check_enabled(o, "C14")) {
        auto r = head_record(h, "C14", "f=A f~=C (h2o-paper)", ClaimKind::Theorem, two_fail == 0,
                             static_cast<double>(one_fail), first_one);
        r.detail = {{"eps_plus", ep},
                    {"eps_minus", em},
                    {"two_sided_failures", two_fail},
                    {"one_sided_failures", one_fail},
                    {"base_step", i0}};
        out.push_back(std::move(r));
      }
      if (check_enabled(o, "D6")) {
        auto r = head_record(h, "D6", "trace f=A f~=C", ClaimKind::Defect, one_fail == 0, shortfall, first_one);
        r.detail = {{"eps_plus", ep}, {"eps_minus", em}, {"one_sided_failures", one_fail}};
        out.push_back(std::move(r));
      }
    }
  }
}

}  // namespace kvo::detail
