// C9: robustness of each eviction of h2o-paper to a perturbed objective (Lemma D.19), f = A and
// f~ = C (the run's own decision) or fp16(C) (what fp16 scores would evict), h = id.
#include <algorithm>
#include <array>
#include <cmath>

#include "head_data.hpp"
#include "kvo/core/safetensors.hpp"

namespace kvo::detail {
namespace {

class RobustnessCheck final : public StepCheck {
 public:
  RobustnessCheck(const HeadInfo& h, const TraceChecksOptions& o) : h_(h) {
    const int p = h.run_index(PolicyId::H2OPaper);
    if (p >= 0 && h.runs[static_cast<size_t>(p)].scores && check_enabled(o, "C9")) paper_ = p;
  }

  void step(const HeadStep& hs) override {
    const int i = hs.i;
    if (paper_ < 0 || i < std::max(h_.prompt_len, 0)) return;
    const RunStep& run = hs.runs[static_cast<size_t>(paper_)];
    const StepRecord& s = *run.cur;
    if (s.evicted.size() != 1) return;
    const auto& G = s.attended;
    const auto& acc = hs.acc;
    for (size_t x = 0; x < 2; ++x) {
      const bool half = x == 1;
      Acc& a = acc_[x];
      auto wt = [&](int j) {
        return half ? static_cast<double>(half_to_float(float_to_half(static_cast<float>(run.score(j)))))
                    : run.score(j);
      };
      double fa = 0.0, ft = 0.0;
      for (int j : G) {
        fa += acc[static_cast<size_t>(j)];
        ft += wt(j);
      }
      // X_v = G \ {v}; S = G \ {i}: differences of modular functions are weight differences.
      double delta = 0.0, best_f = -INFINITY, best_ft = -INFINITY;
      int pick = -1;
      for (int v : G) {
        const double df = acc[static_cast<size_t>(i)] - acc[static_cast<size_t>(v)], dft = wt(i) - wt(v);
        delta = std::max(delta, std::fabs(dft - df));
        best_f = std::max(best_f, fa - acc[static_cast<size_t>(v)]);
        if (ft - wt(v) > best_ft) best_ft = ft - wt(v), pick = v;  // ties: the oldest
      }
      const double eps_hat = 2.0 * h_.n * delta;
      // The run's own decision for f~ = C (a policy that does not evict the argmin fails);
      // what fp16 scores would have evicted for fp16(C).
      if (!half) pick = s.evicted.front();
      const double got = fa - acc[static_cast<size_t>(pick)];
      if (got < kLine * best_f - eps_hat - 1e-9 * (1.0 + std::fabs(best_f))) {
        ++a.fails;
        if (a.first < 0) a.first = i;
      }
      const double rel = best_f > 0 ? eps_hat / best_f : 0.0;
      if (rel > a.worst_eps) a.worst_eps = rel, a.at = i;
    }
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    if (paper_ < 0) return;
    for (size_t x = 0; x < 2; ++x) {
      const Acc& a = acc_[x];
      auto r = head_record(h_, "C9", std::string("f=A f~=") + (x == 1 ? "fp16(C)" : "C"), ClaimKind::Theorem,
                           a.fails == 0, a.worst_eps, a.fails ? a.first : a.at);
      r.detail = {{"failures", a.fails}, {"metric", "max eps_hat / opt_swap"}};
      out.push_back(std::move(r));
    }
  }

 private:
  struct Acc {
    double worst_eps = 0.0;
    long fails = 0, first = -1, at = -1;
  };
  const HeadInfo& h_;
  int paper_ = -1;
  std::array<Acc, 2> acc_{};
};

}  // namespace

std::unique_ptr<StepCheck> robustness_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<RobustnessCheck>(h, o);
}

}  // namespace kvo::detail
