// Checks on the paper-exact run's accumulated scores õ (Algorithm 2): C3 the argmax of h(F) is the
// argmin of õ for h = id, sqrt, log; C4 the incremental õ equals a recomputation, and how far a
// FlexGen-style fp16 accumulation drifts; C5 h(sum õ) is monotone submodular; C12 universal
// monotonicity of the instantiations A, B, C (C5 and C12 at sampled eviction steps).
#include <algorithm>
#include <array>
#include <cmath>

#include "head_data.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/core/safetensors.hpp"
#include "kvo/proofs_check/set_function_checks.hpp"

namespace kvo::detail {
namespace {

const Concave kTransforms[] = {Concave::Identity, Concave::Sqrt, Concave::Log};

float to_half(double x) { return half_to_float(float_to_half(static_cast<float>(x))); }

int paper_with_scores(const HeadInfo& h) {
  const int p = h.run_index(PolicyId::H2OPaper);
  return p >= 0 && h.runs[static_cast<size_t>(p)].scores ? p : -1;
}

class ScoresCheck final : public StepCheck {
 public:
  ScoresCheck(const HeadInfo& h, const TraceChecksOptions& o)
      : h_(h), run_(paper_with_scores(h)), c3_(check_enabled(o, "C3")), c4_(check_enabled(o, "C4")) {
    if (run_ < 0) return;
    if (c4_) re_.assign(static_cast<size_t>(h.n), 0.0L), f16_.assign(static_cast<size_t>(h.n), 0.0f);
  }

  void step(const HeadStep& hs) override {
    if (run_ < 0) return;
    const RunStep& run = hs.runs[static_cast<size_t>(run_)];
    const StepRecord& s = *run.cur;
    const int i = hs.i;
    const bool full = !s.evicted.empty();                       // a step of Alg. 2's full branch
    if (c3_ && full && s.evicted.size() == 1) c3_step(i, run);  // the one-off prompt truncation evicts several
    if (!c4_) return;
    if (full) {
      for (size_t t = 0; t < s.attended.size(); ++t) {
        const auto j = static_cast<size_t>(s.attended[t]);
        re_[j] += static_cast<long double>(s.probs[t]);
        f16_[j] = to_half(static_cast<double>(f16_[j]) + static_cast<double>(to_half(s.probs[t])));
      }
      if (s.evicted.size() == 1) {  // would fp16 scores evict the same token?
        size_t amin = 0;
        for (size_t t = 1; t < s.attended.size(); ++t)
          if (f16_[static_cast<size_t>(s.attended[t])] < f16_[static_cast<size_t>(s.attended[amin])]) amin = t;
        ++decisions_;
        decision_drift_ += s.attended[amin] != s.evicted.front() ? 1 : 0;
      }
    }
    for (int j = 0; j <= i; ++j) {
      const double want = static_cast<double>(re_[static_cast<size_t>(j)]);
      if (want == 0.0 && run.score(j) == 0.0) continue;
      const double err = std::fabs(run.score(j) - want) / std::max(std::fabs(want), 1e-300);
      if (err > worst_) {
        worst_ = err;
        worst_step_ = i;
      }
    }
    if (i == h_.n - 1)
      for (int j : s.kept) {
        const double want = static_cast<double>(re_[static_cast<size_t>(j)]);
        if (want > 0)
          drift_ = std::max(drift_, std::fabs(static_cast<double>(f16_[static_cast<size_t>(j)]) - want) / want);
      }
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    if (run_ < 0) return;
    const std::string& name = h_.runs[static_cast<size_t>(run_)].name;
    if (c3_)
      for (size_t x = 0; x < 3; ++x) {
        const C3& a = c3_acc_[x];
        auto r = head_record(h_, "C3", "h=" + to_string(kTransforms[x]), ClaimKind::Theorem, a.disagree == 0,
                             static_cast<double>(a.disagree), a.first);
        r.detail = {{"steps", a.checked}, {"rounding_ties", a.ties}, {"tie_rule", "evict the oldest"}};
        out.push_back(std::move(r));
      }
    if (c4_) {
      auto r = head_record(h_, "C4", name, ClaimKind::Theorem, worst_ <= 1e-9, worst_, worst_step_);
      r.detail = {{"tolerance", 1e-9},
                  {"fp16_max_relative_drift", drift_},
                  {"fp16_decisions_changed", decision_drift_},
                  {"decisions", decisions_}};
      out.push_back(std::move(r));
    }
  }

 private:
  struct C3 {
    long disagree = 0, ties = 0, checked = 0, first = -1;
  };

  void c3_step(int i, const RunStep& run) {
    const StepRecord& s = *run.cur;
    std::vector<double> w;
    for (int j : s.attended) w.push_back(run.score(j));
    for (size_t x = 0; x < 3; ++x) {
      C3& a = c3_acc_[x];
      const auto loo = ModularConcave(w, kTransforms[x]).leave_one_out();
      size_t amax = 0, amin = 0;
      for (size_t t = 1; t < w.size(); ++t) {
        if (loo[t] > loo[amax]) amax = t;
        if (w[t] < w[amin]) amin = t;
      }
      ++a.checked;
      const bool same = amax == amin && s.attended[amin] == s.evicted.front();
      if (same) continue;
      const double tol = 4e-16 * (1.0 + std::fabs(loo[amax]));
      const bool tied = loo[amax] - loo[amin] <= tol;
      const int actual = s.evicted.front();
      size_t pa = 0;
      while (pa < s.attended.size() && s.attended[pa] != actual) ++pa;
      const bool actual_tied = pa < w.size() && loo[amax] - loo[pa] <= tol;
      if (tied && actual_tied) {
        ++a.ties;
      } else {
        ++a.disagree;
        if (a.first < 0) a.first = i;
      }
    }
  }

  const HeadInfo& h_;
  int run_;
  bool c3_, c4_;
  std::array<C3, 3> c3_acc_{};
  std::vector<long double> re_;
  std::vector<float> f16_;
  double worst_ = 0.0, drift_ = 0.0;
  long worst_step_ = -1, decision_drift_ = 0, decisions_ = 0;
};

// C5 and C12 at the sampled eviction steps.
class ScoresSampledCheck final : public StepCheck {
 public:
  ScoresSampledCheck(const HeadInfo& h, const TraceChecksOptions& o, std::vector<int> steps)
      : h_(h), o_(o), run_(paper_with_scores(h)), steps_(std::move(steps)) {}

  void step(const HeadStep& hs) override {
    if (run_ < 0 || !std::binary_search(steps_.begin(), steps_.end(), hs.i)) return;
    const bool c12 = check_enabled(o_, "C12");
    const RunStep& run = hs.runs[static_cast<size_t>(run_)];
    const StepRecord& s = *run.cur;
    const int i = hs.i;
    for (size_t x = 0; x < 3; ++x)
      for (size_t in = 0; in < 3; ++in) {
        if (in != 2 && !c12) continue;
        std::vector<double> w;
        for (size_t t = 0; t < s.attended.size(); ++t) {
          const int j = s.attended[t];
          w.push_back(in == 0 ? hs.acc[static_cast<size_t>(j)] : in == 1 ? s.probs[t] : run.score(j));
        }
        const auto sc = scan_submodularity(ModularConcave(w, kTransforms[x]), {}, o_.samples,
                                           o_.run.seed + static_cast<std::uint64_t>(i));
        Acc& a = acc_[x][in];
        if ((sc.violations || sc.monotone_violations) && a.first < 0) a.first = i;
        a.total.triples += sc.triples;
        a.total.violations += sc.violations;
        a.total.worst = std::max(a.total.worst, sc.worst);
        a.total.pairs += sc.pairs;
        a.total.monotone_violations += sc.monotone_violations;
        a.total.worst_monotone = std::max(a.total.worst_monotone, sc.worst_monotone);
      }
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    const bool c5 = check_enabled(o_, "C5"), c12 = check_enabled(o_, "C12");
    if (run_ < 0 || (!c5 && !c12)) return;
    for (size_t x = 0; x < 3; ++x)
      for (size_t in = 0; in < 3; ++in) {
        if (in != 2 && !c12) continue;
        const SubmodularityScan& total = acc_[x][in].total;
        const long first = acc_[x][in].first;
        const std::string variant = std::string(1, "ABC"[in]) + "[" + to_string(kTransforms[x]) + "]";
        if (c5 && in == 2) {
          const long v = total.violations + total.monotone_violations;
          auto r = head_record(h_, "C5", variant, ClaimKind::Theorem, v == 0, static_cast<double>(v), first);
          r.detail = {{"triples", total.triples},
                      {"submodular_violations", total.violations},
                      {"pairs", total.pairs},
                      {"monotone_violations", total.monotone_violations},
                      {"steps", steps_.size()}};
          out.push_back(std::move(r));
        }
        if (c12) {
          auto r = head_record(h_, "C12", variant, ClaimKind::Theorem, total.monotone_violations == 0,
                               static_cast<double>(total.monotone_violations), first);
          r.detail = {{"pairs", total.pairs}, {"worst", total.worst_monotone}};
          out.push_back(std::move(r));
        }
      }
  }

 private:
  struct Acc {
    SubmodularityScan total;
    long first = -1;
  };
  const HeadInfo& h_;
  const TraceChecksOptions& o_;
  int run_;
  std::vector<int> steps_;
  std::array<std::array<Acc, 3>, 3> acc_{};
};

}  // namespace

std::unique_ptr<StepCheck> scores_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<ScoresCheck>(h, o);
}

std::unique_ptr<StepCheck> scores_sampled_check(const HeadInfo& h, const TraceChecksOptions& o,
                                                const std::vector<int>& steps) {
  return std::make_unique<ScoresSampledCheck>(h, o, steps);
}

}  // namespace kvo::detail
