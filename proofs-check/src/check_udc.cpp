// The paper's dynamic-submodular conditions along realised trajectories (docs/theory.md §2.0):
// C10 UDC1's theta along h2o-paper, C11 UDC2's gamma in both directions (D5 the defect between
// them), and the hypotheses of Theorem 4.4 (C15's hypotheses record). Instantiations: A dense
// accumulated A_i(j); B one-step p_i renormalised over G_i; C the run's own accumulated score.
#include <algorithm>
#include <cmath>

#include "head_data.hpp"
#include "kvo/core/concave.hpp"

namespace kvo::detail {
namespace {

class UdcCheck final : public StepCheck {
 public:
  UdcCheck(const HeadInfo& h, const TraceChecksOptions& o) : h_(h), o_(o), paper_(h.run_index(PolicyId::H2OPaper)) {
    if (paper_ >= 0 && check_enabled(o, "C10"))
      now_b_.assign(static_cast<size_t>(h.n), 0.0), before_b_.assign(static_cast<size_t>(h.n), 0.0);
  }

  // B: p_i over G_i = S_{i-1} ∪ {i}; p_{i-1} over G_{i-1}.
  void step(const HeadStep& s) override {
    if (now_b_.empty() || s.i < 1) return;
    const StepRecord &cur = *s.runs[static_cast<size_t>(paper_)].cur, &prev = *s.runs[static_cast<size_t>(paper_)].prev;
    double now = 0.0, before = 0.0;
    for (size_t t = 0; t < cur.attended.size(); ++t)
      if (cur.attended[t] != s.i) now += cur.probs[t];
    for (size_t t = 0; t < prev.attended.size(); ++t)
      if (std::binary_search(prev.kept.begin(), prev.kept.end(), prev.attended[t])) before += prev.probs[t];
    now_b_[static_cast<size_t>(s.i)] = now;
    before_b_[static_cast<size_t>(s.i)] = before;
  }

  void finish(const HeadSeries& series, std::vector<CheckRecord>& out, HeadExtras& extras) override {
    const int n = h_.n, k = h_.k(), s0 = pressure_step(h_);
    const double thr = udc_threshold(h_);
    const std::vector<double>& optA = series.top_acc;
    const RunSeries* paper = paper_ >= 0 ? &series.runs[static_cast<size_t>(paper_)] : nullptr;
    const std::vector<double> optC = paper ? paper->top_score : std::vector<double>{};

    // C11 / D5: gamma in both directions.
    const Gamma gA = gammas(optA, s0);
    extras.gamma_proof = gA.proof;
    if (check_enabled(o_, "C11")) {
      for (Concave hh : {Concave::Identity, Concave::Sqrt, Concave::Log}) {
        std::vector<double> v(optA.size());
        for (size_t i = 0; i < v.size(); ++i) v[i] = apply(hh, optA[i]);
        const Gamma g = gammas(v, s0);
        auto r = head_record(h_, "C11", "A[" + to_string(hh) + "]", ClaimKind::Finding, g.proof <= thr, g.proof,
                             g.proof_step);
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
      auto r = head_record(h_, "C11", "A[id] gamma^proof <= 1/(k+1)", ClaimKind::Theorem,
                           gA.proof <= bound * (1 + 1e-12), gA.proof, gA.proof_step);
      r.detail = {{"bound", bound}};
      out.push_back(std::move(r));
      if (!optC.empty()) {
        const Gamma g = gammas(optC, s0);
        auto rc = head_record(h_, "C11", "C[id]", ClaimKind::Finding, g.proof <= thr, g.proof, g.proof_step);
        rc.detail = {{"gamma_def", g.def}, {"gamma_proof", g.proof}, {"threshold_alpha_over_10n", thr}};
        out.push_back(std::move(rc));
      }
    }
    if (check_enabled(o_, "D5")) {
      const bool matters = gA.def <= thr && gA.proof > thr;
      auto r = head_record(h_, "D5", "A[id]", ClaimKind::Defect, !matters, gA.proof - gA.def, gA.proof_step);
      r.detail = {{"gamma_def", gA.def}, {"gamma_proof", gA.proof}, {"threshold", thr}};
      out.push_back(std::move(r));
    }

    // C10: theta along the paper-exact trajectory.
    if (paper && check_enabled(o_, "C10")) {
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
          const auto x = static_cast<size_t>(i);
          double now = 0.0, before = 0.0;
          if (in.name == "A") {
            now = paper->now_acc[x];
            before = paper->v_acc[x - 1];
          } else if (in.name == "C") {
            now = paper->now_score[x];
            before = paper->v_score[x - 1];
          } else {
            now = now_b_[x];
            before = before_b_[x];
          }
          now = apply(in.hh, now);
          before = apply(in.hh, before);
          const double theta = before > 0 ? std::max(0.0, 1.0 - now / before) : 0.0;
          all.push_back(theta);
          if (theta > worst) worst = theta, at = i;
        }
        std::sort(all.begin(), all.end());
        const bool must_be_zero = in.name != "B";
        auto r = head_record(h_, "C10", in.name + "[" + to_string(in.hh) + "]",
                             must_be_zero ? ClaimKind::Theorem : ClaimKind::Finding,
                             must_be_zero ? worst <= 1e-12 : worst <= thr, worst, at);
        r.detail = {{"theta_max", worst},
                    {"theta_median", all.empty() ? 0.0 : all[all.size() / 2]},
                    {"threshold_alpha_over_10n", thr},
                    {"trajectory", h_.runs[static_cast<size_t>(paper_)].name}};
        if (in.name == "B" && in.hh == Concave::Identity) extras.theta_b = worst;
        out.push_back(std::move(r));
      }
    }

    // C15's hypotheses (reported apart from its conclusion): theta = gamma <= alpha / (10 n) for some
    // alpha < 1, i.e. at most 1 / (10 n); theta = 0 for A (C10), gamma^proof measured (C11).
    if (check_enabled(o_, "C15")) {
      auto r = head_record(h_, "C15", "hypotheses (theta, gamma <= 1/(10n))", ClaimKind::Finding, gA.proof <= thr,
                           gA.proof, gA.proof_step);
      r.detail = {{"gamma_proof", gA.proof}, {"theta_A", 0.0}, {"threshold", thr}};
      out.push_back(std::move(r));
    }
  }

 private:
  const HeadInfo& h_;
  const TraceChecksOptions& o_;
  int paper_;
  std::vector<double> now_b_, before_b_;
};

}  // namespace

std::unique_ptr<StepCheck> udc_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<UdcCheck>(h, o);
}

}  // namespace kvo::detail
