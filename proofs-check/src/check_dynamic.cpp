// Checks along realised trajectories (main-text convention: S_i is the cache after step i and
// G_i = S_{i-1} ∪ {i}): C9 robustness (Lemma D.19), C10 UDC1 theta, C11 UDC2 gamma in both
// directions, C13 the induction chain of Lemma D.29, C14 the approximate induction of Lemma D.30
// with one- and two-sided eps0, C15 Theorem 4.4's ratio and alpha, and the defects D5-D8.
// Instantiations (theory note §2.0): A dense accumulated A_i(j); B one-step p_i renormalised over
// G_i; C the run's own accumulated score (õ of Algorithm 2 for h2o-paper).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "head_data.hpp"
#include "kvo/core/concave.hpp"
#include "kvo/core/safetensors.hpp"

namespace kvo::detail {
namespace {

const double kLine = 1.0 - 1.0 / std::numbers::e;

double sum_over(const Eigen::MatrixXd& w, int i, const std::vector<int>& set) {
  double s = 0.0;
  for (int j : set) s += w(i, j);
  return s;
}

struct Gamma {
  double def = 0.0, proof = 0.0;
  long def_step = -1, proof_step = -1;
  std::vector<double> proof_at;  // per step
};
Gamma gammas(const std::vector<double>& opt, int from) {
  Gamma g;
  g.proof_at.assign(opt.size(), 0.0);
  for (int i = std::max(from, 1); i + 1 < static_cast<int>(opt.size()); ++i) {
    const double d = opt[i - 1] > 0 ? std::max(0.0, 1.0 - opt[i] / opt[i - 1]) : 0.0;
    const double p = opt[i + 1] > 0 ? std::max(0.0, 1.0 - opt[i] / opt[i + 1]) : 0.0;
    g.proof_at[static_cast<size_t>(i)] = p;
    if (d > g.def) g.def = d, g.def_step = i;
    if (p > g.proof) g.proof = p, g.proof_step = i;
  }
  return g;
}

// First step of a run with exactly one eviction after the prompt (the induction's base step).
int base_step(const PolicyRun& run, int prompt_len) {
  for (int i = std::max(prompt_len, 0); i < static_cast<int>(run.replay.steps.size()); ++i)
    if (run.replay.steps[static_cast<size_t>(i)].evicted.size() == 1) return i;
  return -1;
}

}  // namespace

void check_dynamic(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out, HeadExtras& extras) {
  const int n = h.n, k = h.k();
  const int s0 = std::max(k, h.prompt_len - 1);
  const double thr = 1.0 / (10.0 * n);  // theta = gamma = alpha / (10 n) at the most lenient alpha -> 1
  const std::vector<double> optA = topk_row_sums(h.acc, n, k);
  const PolicyRun* paper = h.run(PolicyId::H2OPaper);
  std::vector<double> optC;
  if (paper && paper->scores.size()) optC = topk_row_sums(paper->scores, n, k);

  // C11 / D5: gamma in both directions.
  const Gamma gA = gammas(optA, s0);
  extras.gamma_proof = gA.proof;
  if (check_enabled(o, "C11")) {
    for (Concave hh : {Concave::Identity, Concave::Sqrt, Concave::Log}) {
      std::vector<double> v(optA.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = apply(hh, optA[i]);
      const Gamma g = gammas(v, s0);
      auto r =
          head_record(h, "C11", "A[" + to_string(hh) + "]", ClaimKind::Finding, g.proof <= thr, g.proof, g.proof_step);
      r.detail = {{"gamma_def", g.def},
                  {"gamma_def_step", g.def_step},
                  {"gamma_proof", g.proof},
                  {"threshold_alpha_over_10n", thr},
                  {"hypothesis_def_holds", g.def <= thr},
                  {"hypothesis_proof_holds", g.proof <= thr}};
      out.push_back(std::move(r));
    }
    // [R] for A with h = id: opt_{i+1} <= opt_i + 1 and opt_i >= k, so gamma^proof <= 1 / (k + 1).
    const double bound = 1.0 / (k + 1.0);
    auto r = head_record(h, "C11", "A[id] gamma^proof <= 1/(k+1)", ClaimKind::Theorem, gA.proof <= bound * (1 + 1e-12),
                         gA.proof, gA.proof_step);
    r.detail = {{"bound", bound}};
    out.push_back(std::move(r));
    if (!optC.empty()) {
      const Gamma g = gammas(optC, s0);
      auto rc = head_record(h, "C11", "C[id]", ClaimKind::Finding, g.proof <= thr, g.proof, g.proof_step);
      rc.detail = {{"gamma_def", g.def}, {"gamma_proof", g.proof}, {"threshold_alpha_over_10n", thr}};
      out.push_back(std::move(rc));
    }
  }
  if (check_enabled(o, "D5")) {
    const bool matters = gA.def <= thr && gA.proof > thr;
    auto r = head_record(h, "D5", "A[id]", ClaimKind::Defect, !matters, gA.proof - gA.def, gA.proof_step);
    r.detail = {{"gamma_def", gA.def}, {"gamma_proof", gA.proof}, {"threshold", thr}};
    out.push_back(std::move(r));
  }

  // C10: theta along the paper-exact trajectory.
  if (paper && check_enabled(o, "C10")) {
    struct Inst {
      std::string name;
      Concave hh;
    };
    const std::vector<Inst> insts = {{"A", Concave::Identity},
                                     {"C", Concave::Identity},
                                     {"B", Concave::Identity},
                                     {"B", Concave::Sqrt},
                                     {"B", Concave::Log}};
    for (const auto& in : insts) {
      double worst = 0.0;
      long at = -1;
      std::vector<double> all;
      for (int i = std::max(s0, 1) + 1; i < n; ++i) {
        const auto& prev = paper->replay.steps[static_cast<size_t>(i - 1)];
        const auto& cur = paper->replay.steps[static_cast<size_t>(i)];
        double now = 0.0, before = 0.0;
        if (in.name == "A" || in.name == "C") {
          const Eigen::MatrixXd& w = in.name == "A" ? h.acc : paper->scores;
          now = sum_over(w, i, prev.kept);
          before = sum_over(w, i - 1, prev.kept);
        } else {  // B: p_i over G_i = S_{i-1} ∪ {i}; p_{i-1} over G_{i-1}
          for (size_t t = 0; t < cur.attended.size(); ++t)
            if (cur.attended[t] != i) now += cur.probs[t];
          for (size_t t = 0; t < prev.attended.size(); ++t)
            if (std::binary_search(prev.kept.begin(), prev.kept.end(), prev.attended[t])) before += prev.probs[t];
        }
        now = apply(in.hh, now);
        before = apply(in.hh, before);
        const double theta = before > 0 ? std::max(0.0, 1.0 - now / before) : 0.0;
        all.push_back(theta);
        if (theta > worst) worst = theta, at = i;
      }
      std::sort(all.begin(), all.end());
      const bool must_be_zero = in.name != "B";
      auto r = head_record(h, "C10", in.name + "[" + to_string(in.hh) + "]",
                           must_be_zero ? ClaimKind::Theorem : ClaimKind::Finding,
                           must_be_zero ? worst <= 1e-12 : worst <= thr, worst, at);
      r.detail = {{"theta_max", worst},
                  {"theta_median", all.empty() ? 0.0 : all[all.size() / 2]},
                  {"threshold_alpha_over_10n", thr},
                  {"trajectory", paper->name}};
      if (in.name == "B" && in.hh == Concave::Identity) extras.theta_b = worst;
      out.push_back(std::move(r));
    }
  }

  // C15's hypotheses (reported apart from its conclusion): theta = gamma <= alpha / (10 n) for some
  // alpha < 1, i.e. at most 1 / (10 n); theta = 0 for A (C10), gamma^proof measured (C11).
  if (check_enabled(o, "C15")) {
    auto r = head_record(h, "C15", "hypotheses (theta, gamma <= 1/(10n))", ClaimKind::Finding, gA.proof <= thr,
                         gA.proof, gA.proof_step);
    r.detail = {{"gamma_proof", gA.proof}, {"theta_A", 0.0}, {"threshold", thr}};
    out.push_back(std::move(r));
  }

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
                                                                       : topk_row_sums(run.scores, n, k);
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
