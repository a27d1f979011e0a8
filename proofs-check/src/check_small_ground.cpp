// Classic greedy facts on objectives built from the trace at sampled steps, where brute force is
// exact: the ground set is the most recent `ground` keys the query attended. C6 dynamic
// submodularity on supersets of Z = S_{i-1} (whole prefix), C7 NWF, C8/D11 noisy-oracle greedy,
// C16 full-knowledge greedy, C20 curvature, C21 submodularity ratio, C22 a-posteriori bound.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <numeric>

#include "claim_sink.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/core/output_fidelity.hpp"
#include "kvo/core/saturated_coverage.hpp"
#include "kvo/oracle/static_oracle.hpp"
#include "kvo/proofs_check/set_function_checks.hpp"

namespace kvo::detail {

void ClaimAcc::take(double m, bool ok, long i) {  // step: the first failure, else the worst metric
  const bool worse = !any || (lower_worse ? m < metric : m > metric);
  if (worse) metric = m;
  if (!ok && holds) {
    holds = false;
    step = i;
  } else if (worse && holds) {
    step = i;
  }
  any = true;
}

ClaimAcc& ClaimSink::at(const std::string& id, const std::string& variant, ClaimKind kind, bool lower_worse) {
  for (auto& a : accs_)
    if (a.id == id && a.variant == variant) return a;
  accs_.push_back({id, variant, kind});
  accs_.back().lower_worse = lower_worse;
  return accs_.back();
}

void ClaimSink::flush(const HeadInfo& h, std::vector<CheckRecord>& out) {
  for (auto& a : accs_) {
    auto r = head_record(h, a.id, a.variant, a.kind, a.holds, a.metric, a.step);
    r.detail = a.detail;
    out.push_back(std::move(r));
  }
}

void check_static_objective(const SetFunction& f, const std::string& name, int k, long i, const TraceChecksOptions& o,
                            ClaimSink& sink) {
  const StaticBounds b = static_bounds(f, k);
  const double ratio = b.opt > 0 ? b.greedy / b.opt : 1.0;
  if (check_enabled(o, "C7")) {
    auto& a = sink.at("C7", name, ClaimKind::Theorem);
    a.take(ratio, b.nwf_holds(), i);
    a.detail = {{"ground", f.ground_size()}, {"k", k}, {"nwf_factor", b.nwf}};
  }
  if (check_enabled(o, "C16") && name == "FL")
    sink.at("C16", "FL", ClaimKind::Theorem).take(ratio, ratio >= kLine - 1e-12, i);
  if (check_enabled(o, "C20")) {
    auto& a = sink.at("C20", name, ClaimKind::Theorem);
    a.take(b.curvature_factor > 0 ? ratio / b.curvature_factor : 1.0, b.curvature_holds(), i);
    a.detail["curvature_last"] = b.curvature;
  }
  if (check_enabled(o, "C22")) {
    auto& a = sink.at("C22", name, ClaimKind::Theorem);
    a.take(b.aposteriori > 0 ? b.greedy / b.aposteriori : 1.0, b.aposteriori_holds(), i);
  }
  if ((check_enabled(o, "C8") || check_enabled(o, "D11")) && name != "sat-cov" && b.opt > 0) {
    for (int trial = 0; trial < 4; ++trial) {
      const bool adv = trial == 3;
      const double eps = (adv ? 0.05 : 0.01) * b.opt / k;
      const NoisyGreedy ng = noisy_greedy(f, k, eps, adv, o.run.seed + static_cast<std::uint64_t>(i * 8 + trial));
      const double tol = 1e-12 * (1.0 + b.opt);
      if (check_enabled(o, "C8"))
        sink.at("C8", name + (adv ? " adversarial" : " random"), ClaimKind::Theorem)
            .take((ng.value - ng.derived_bound) / b.opt, ng.value >= ng.derived_bound - tol, i);
      if (check_enabled(o, "D11")) {
        auto& a = sink.at("D11", name + (adv ? " adversarial" : " random"), ClaimKind::Defect, false);
        a.take((ng.paper_bound - ng.derived_bound) / b.opt, ng.value >= ng.paper_bound - tol, i);
        a.detail = {{"eps_over_opt", eps / b.opt}, {"k", k}};
      }
    }
  }
  if (check_enabled(o, "C21") && name == "FL") {
    GreedyOptions go;
    go.budget = k;
    const auto gr = naive_greedy(f, go);
    const double gamma = submodularity_ratio(f, gr.picks, k);
    sink.at("C21", "FL (submodular: gamma >= 1)", ClaimKind::Theorem).take(gamma, gamma >= 1.0 - 1e-6, i);
  }
}

namespace {

class SmallGroundCheck final : public StepCheck {
 public:
  SmallGroundCheck(const HeadInfo& h, const TraceChecksOptions& o, std::vector<int> steps)
      : h_(h), o_(o), steps_(std::move(steps)) {
    run_ = h.run_index(PolicyId::H2OPaper);
    if (run_ < 0 && !h.runs.empty()) run_ = 0;
  }

  void step(const HeadStep& hs) override {
    if (run_ < 0 || !std::binary_search(steps_.begin(), steps_.end(), hs.i)) return;
    const int i = hs.i;
    const RunStep& run = hs.runs[static_cast<size_t>(run_)];
    const StepRecord& s = *run.cur;
    const bool values = h_.view->has_values();
    const auto& win = hs.window;  // dense rows i - W + 1 .. i
    const int m = std::min<int>(o_.ground, static_cast<int>(s.attended.size()));
    const std::vector<int> g(s.attended.end() - m, s.attended.end());
    const int W = std::min(16, i + 1);
    Eigen::MatrixXd sim(W, m);
    for (int r = 0; r < W; ++r)
      for (int t = 0; t < m; ++t)
        sim(r, t) = win[static_cast<size_t>(r)][static_cast<size_t>(g[static_cast<size_t>(t)])];
    std::vector<double> wa(static_cast<size_t>(m));
    for (int t = 0; t < m; ++t) wa[static_cast<size_t>(t)] = hs.acc[static_cast<size_t>(g[static_cast<size_t>(t)])];
    std::vector<std::pair<std::string, std::unique_ptr<SetFunction>>> fns;
    fns.emplace_back("A[sqrt]", std::make_unique<ModularConcave>(wa, Concave::Sqrt));
    fns.emplace_back("FL", std::make_unique<FacilityLocation>(sim));
    fns.emplace_back("sat-cov", std::make_unique<SaturatedCoverage>(sim, 0.5));
    std::unique_ptr<SetFunction> fid;
    if (values) {
      Eigen::VectorXd a(m);
      Eigen::MatrixXd v(m, h_.view->head_dim());
      for (int t = 0; t < m; ++t) {
        a(t) = hs.a[static_cast<size_t>(g[static_cast<size_t>(t)])];
        v.row(t) = h_.view->value(g[static_cast<size_t>(t)]).transpose();
      }
      fid = std::make_unique<OutputFidelity>(a, v);
    }
    const int k = std::min(o_.small_k, m);
    for (auto& [name, f] : fns) check_static_objective(*f, name, k, i, o_, sink_);
    if (fid) {
      const StaticBounds b = static_bounds(*fid, k);
      const double ratio = b.opt > 0 ? b.greedy / b.opt : 1.0;
      if (check_enabled(o_, "C7"))
        sink_.at("C7", "E (not submodular by construction)", ClaimKind::Finding).take(ratio, b.nwf_holds(), i);
      if (check_enabled(o_, "C16")) sink_.at("C16", "E", ClaimKind::Finding).take(ratio, ratio >= kLine, i);
      if (check_enabled(o_, "C21")) {
        GreedyOptions go;
        go.budget = k;
        const auto gr = naive_greedy(*fid, go);
        const double gamma = submodularity_ratio(*fid, gr.picks, k);
        sink_.at("C21", "E gamma", ClaimKind::Finding).take(gamma, gamma >= 1.0 - 1e-9, i);
        if (is_monotone_exhaustive(*fid)) {
          const double bound = 1.0 - std::exp(-std::max(gamma, 0.0));
          sink_.at("C21", "E monotone: greedy >= (1-e^-gamma) OPT", ClaimKind::Theorem)
              .take(ratio, b.greedy >= bound * b.opt - 1e-12 * (1.0 + b.opt), i);
        }
      }
    }
    // C16, A with h = id over the whole prefix: greedy = top-k = the optimum.
    if (check_enabled(o_, "C16")) {
      std::vector<double> w(hs.acc.begin(), hs.acc.end());
      const ModularConcave f(w, Concave::Identity);
      GreedyOptions go;
      go.budget = h_.k();
      const double gv = lazy_greedy(f, go).value, opt = solve_topk(f, h_.k()).value;
      sink_.at("C16", "A[id] whole prefix", ClaimKind::Theorem)
          .take(opt > 0 ? gv / opt : 1.0, std::fabs(gv - opt) <= 1e-9 * (1.0 + opt), i);
    }
    // C22 at the full cache size: the certified ratio greedy / bound for FL over all of G_i.
    if (check_enabled(o_, "C22")) {
      Eigen::MatrixXd simg(W, static_cast<int>(s.attended.size()));
      for (int r = 0; r < W; ++r)
        for (size_t t = 0; t < s.attended.size(); ++t)
          simg(r, static_cast<int>(t)) = win[static_cast<size_t>(r)][static_cast<size_t>(s.attended[t])];
      const FacilityLocation f(simg);
      GreedyOptions go;
      go.budget = std::max(1, W / 2);
      const auto gr = lazy_greedy(f, go);
      sink_.at("C22", "FL certified ratio |G_i|", ClaimKind::Finding)
          .take(gr.upper_bound > 0 ? gr.value / gr.upper_bound : 1.0, true, i);
    }
    // C6: dynamic submodularity of f_{Z,i} on supersets of Z = S_{i-1}, ground [0, i].
    if (check_enabled(o_, "C6")) {
      const std::vector<int>& Z = run.prev->kept;
      const auto& lg = hs.logits;
      std::vector<double> wA(static_cast<size_t>(i) + 1), wB(wA.size()), wC(wA.size());
      double mx = lg[static_cast<size_t>(i)];
      for (int j : Z) mx = std::max(mx, lg[static_cast<size_t>(j)]);
      double den = std::exp(lg[static_cast<size_t>(i)] - mx);
      for (int j : Z) den += std::exp(lg[static_cast<size_t>(j)] - mx);
      for (int j = 0; j <= i; ++j) {
        wA[static_cast<size_t>(j)] = hs.acc[static_cast<size_t>(j)];
        wB[static_cast<size_t>(j)] =
            std::isfinite(lg[static_cast<size_t>(j)]) ? std::exp(lg[static_cast<size_t>(j)] - mx) / den : 0.0;
        wC[static_cast<size_t>(j)] = run.score(j);
      }
      const std::uint64_t seed = o_.run.seed + static_cast<std::uint64_t>(i);
      struct Item {
        const char* name;
        const std::vector<double>* w;
      };
      for (const Item& it : {Item{"A[sqrt]", &wA}, Item{"B[sqrt]", &wB}, Item{"C[sqrt]", &wC}}) {
        const auto sc = scan_submodularity(ModularConcave(*it.w, Concave::Sqrt), Z, o_.samples, seed);
        sink_.at("C6", it.name, ClaimKind::Theorem, false).take(sc.rate(), sc.violations == 0, i);
      }
      if (values) {
        Eigen::VectorXd a(i + 1);
        Eigen::MatrixXd v(i + 1, h_.view->head_dim());
        for (int j = 0; j <= i; ++j) {
          a(j) = hs.a[static_cast<size_t>(j)];
          v.row(j) = h_.view->value(j).transpose();
        }
        const auto sc = scan_submodularity(OutputFidelity(a, v), Z, o_.samples, seed);
        sink_.at("C6", "E", ClaimKind::Finding, false).take(sc.rate(), sc.violations == 0, i);
      }
    }
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override { sink_.flush(h_, out); }

 private:
  const HeadInfo& h_;
  const TraceChecksOptions& o_;
  std::vector<int> steps_;
  int run_ = -1;
  ClaimSink sink_;
};

}  // namespace

std::unique_ptr<StepCheck> small_ground_check(const HeadInfo& h, const TraceChecksOptions& o,
                                              const std::vector<int>& steps) {
  return std::make_unique<SmallGroundCheck>(h, o, steps);
}

}  // namespace kvo::detail
