// Checks on the paper-exact run's accumulated scores õ (Algorithm 2): C3 the argmax of h(F) is the
// argmin of õ for h = id, sqrt, log; C4 the incremental õ equals a recomputation, and how far a
// FlexGen-style fp16 accumulation drifts; C5 h(sum õ) is monotone submodular; C12 universal
// monotonicity of the instantiations A, B, C.
#include <algorithm>
#include <cmath>

#include "head_data.hpp"
#include "kvo/checks/set_function_checks.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/core/safetensors.hpp"

namespace kvo::detail {
namespace {

const Concave kTransforms[] = {Concave::Identity, Concave::Sqrt, Concave::Log};

float to_half(double x) { return half_to_float(float_to_half(static_cast<float>(x))); }

}  // namespace

void check_scores(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out) {
  const PolicyRun* run = h.run(PolicyId::H2OPaper);
  if (run == nullptr || run->scores.size() == 0) return;
  const std::vector<int> full = eviction_steps(*run);  // steps of Alg. 2's full branch

  if (check_enabled(o, "C3")) {
    for (Concave hh : kTransforms) {
      long disagree = 0, ties = 0, checked = 0, first = -1;
      for (int i : full) {
        const StepRecord& s = run->replay.steps[static_cast<size_t>(i)];
        if (s.evicted.size() != 1) continue;  // the one-off prompt truncation evicts several
        std::vector<double> w;
        for (int j : s.attended) w.push_back(run->scores(i, j));
        const auto loo = ModularConcave(w, hh).leave_one_out();
        size_t amax = 0, amin = 0;
        for (size_t t = 1; t < w.size(); ++t) {
          if (loo[t] > loo[amax]) amax = t;
          if (w[t] < w[amin]) amin = t;
        }
        ++checked;
        const bool same = amax == amin && s.attended[amin] == s.evicted.front();
        if (!same) {
          const double tol = 4e-16 * (1.0 + std::fabs(loo[amax]));
          const bool tied = loo[amax] - loo[amin] <= tol;
          const int actual = s.evicted.front();
          size_t pa = 0;
          while (pa < s.attended.size() && s.attended[pa] != actual) ++pa;
          const bool actual_tied = pa < w.size() && loo[amax] - loo[pa] <= tol;
          if (tied && actual_tied) {
            ++ties;
          } else {
            ++disagree;
            if (first < 0) first = i;
          }
        }
      }
      auto r = head_record(h, "C3", "h=" + to_string(hh), ClaimKind::Theorem, disagree == 0,
                           static_cast<double>(disagree), first);
      r.detail = {{"steps", checked}, {"rounding_ties", ties}, {"tie_rule", "evict the oldest"}};
      out.push_back(std::move(r));
    }
  }

  if (check_enabled(o, "C4")) {
    std::vector<long double> re(static_cast<size_t>(h.n), 0.0L);
    std::vector<float> f16(static_cast<size_t>(h.n), 0.0f);
    double worst = 0.0, drift = 0.0;
    long worst_step = -1, decision_drift = 0, decisions = 0;
    size_t next = 0;
    for (int i = 0; i < h.n; ++i) {
      const StepRecord& s = run->replay.steps[static_cast<size_t>(i)];
      if (next < full.size() && full[next] == i) {
        ++next;
        for (size_t t = 0; t < s.attended.size(); ++t) {
          const auto j = static_cast<size_t>(s.attended[t]);
          re[j] += static_cast<long double>(s.probs[t]);
          f16[j] = to_half(static_cast<double>(f16[j]) + static_cast<double>(to_half(s.probs[t])));
        }
        if (s.evicted.size() == 1) {  // would fp16 scores evict the same token?
          size_t amin = 0;
          for (size_t t = 1; t < s.attended.size(); ++t)
            if (f16[static_cast<size_t>(s.attended[t])] < f16[static_cast<size_t>(s.attended[amin])]) amin = t;
          ++decisions;
          decision_drift += s.attended[amin] != s.evicted.front() ? 1 : 0;
        }
      }
      for (int j = 0; j <= i; ++j) {
        const double want = static_cast<double>(re[static_cast<size_t>(j)]);
        if (want == 0.0 && run->scores(i, j) == 0.0) continue;
        const double err = std::fabs(run->scores(i, j) - want) / std::max(std::fabs(want), 1e-300);
        if (err > worst) {
          worst = err;
          worst_step = i;
        }
      }
    }
    for (int j : run->replay.steps.back().kept) {
      const double want = static_cast<double>(re[static_cast<size_t>(j)]);
      if (want > 0) drift = std::max(drift, std::fabs(static_cast<double>(f16[static_cast<size_t>(j)]) - want) / want);
    }
    auto r = head_record(h, "C4", run->name, ClaimKind::Theorem, worst <= 1e-9, worst, worst_step);
    r.detail = {{"tolerance", 1e-9},
                {"fp16_max_relative_drift", drift},
                {"fp16_decisions_changed", decision_drift},
                {"decisions", decisions}};
    out.push_back(std::move(r));
  }

  const bool c5 = check_enabled(o, "C5"), c12 = check_enabled(o, "C12");
  if (!c5 && !c12) return;
  const auto steps = evenly_spaced(full, 4);
  for (Concave hh : kTransforms) {
    for (const char* inst : {"A", "B", "C"}) {
      const std::string name = std::string(inst);
      if (name != "C" && !c12) continue;
      SubmodularityScan total;
      long first = -1;
      for (int i : steps) {
        const StepRecord& s = run->replay.steps[static_cast<size_t>(i)];
        std::vector<double> w;
        for (size_t t = 0; t < s.attended.size(); ++t) {
          const int j = s.attended[t];
          w.push_back(name == "A" ? h.acc(i, j) : name == "B" ? s.probs[t] : run->scores(i, j));
        }
        const auto sc =
            scan_submodularity(ModularConcave(w, hh), {}, o.samples, o.run.seed + static_cast<std::uint64_t>(i));
        if ((sc.violations || sc.monotone_violations) && first < 0) first = i;
        total.triples += sc.triples;
        total.violations += sc.violations;
        total.worst = std::max(total.worst, sc.worst);
        total.pairs += sc.pairs;
        total.monotone_violations += sc.monotone_violations;
        total.worst_monotone = std::max(total.worst_monotone, sc.worst_monotone);
      }
      const std::string variant = name + "[" + to_string(hh) + "]";
      if (c5 && name == "C") {
        const long v = total.violations + total.monotone_violations;
        auto r = head_record(h, "C5", variant, ClaimKind::Theorem, v == 0, static_cast<double>(v), first);
        r.detail = {{"triples", total.triples},
                    {"submodular_violations", total.violations},
                    {"pairs", total.pairs},
                    {"monotone_violations", total.monotone_violations},
                    {"steps", steps.size()}};
        out.push_back(std::move(r));
      }
      if (c12) {
        auto r = head_record(h, "C12", variant, ClaimKind::Theorem, total.monotone_violations == 0,
                             static_cast<double>(total.monotone_violations), first);
        r.detail = {{"pairs", total.pairs}, {"worst", total.worst_monotone}};
        out.push_back(std::move(r));
      }
    }
  }
}

}  // namespace kvo::detail
