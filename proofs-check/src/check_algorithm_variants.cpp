// Defects of the published pseudocode shown on the trace by running the literal variants of
// Algorithm 1/2 on one head: D1 the fill test "i < k" of Alg. 1 [V3] leaves the cache one short;
// D3 scores over K_{S_{i-1}} without the new key ([V3]) starve the new token; D4 Alg. 2's skipped
// accumulation during the fill changes the caches relative to the code's accumulate-always rule.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "head_data.hpp"
#include "kvo/core/attention.hpp"

namespace kvo::detail {
namespace {

struct Variant {
  bool strict_fill = false;      // Alg. 1 [V3]: fill while i < k (1-indexed) instead of i <= k
  bool include_self = true;      // the query attends S_{i-1} ∪ {i} (ours) or S_{i-1} only ([V3])
  bool accumulate_fill = false;  // accumulate õ during the fill too (the released code)
};

// One variant replayed step by step; the query's logits come from the pass (the same q . k).
struct Sim {
  Variant v;
  int k = 0;
  std::vector<int> S;
  std::vector<double> acc, lg, p;
  long new_token_dropped = 0;  // steps where the new token was evicted at once
  Sim(Variant variant, int n, int budget) : v(variant), k(budget), acc(static_cast<size_t>(n), 0.0) {}
  void step(int i, std::span<const double> logits) {
    const bool fill = v.strict_fill ? i + 1 < k : i + 1 <= k;
    std::vector<int> att = S;
    if (v.include_self || att.empty()) att.push_back(i);
    if (!fill || v.accumulate_fill) {
      lg.resize(att.size());
      p.resize(att.size());
      for (size_t t = 0; t < att.size(); ++t) lg[t] = logits[static_cast<size_t>(att[t])];
      softmax(lg, p);
      for (size_t t = 0; t < att.size(); ++t) acc[static_cast<size_t>(att[t])] += p[t];
    }
    S.push_back(i);
    if (!fill) {
      size_t u = 0;
      for (size_t t = 1; t < S.size(); ++t)
        if (acc[static_cast<size_t>(S[t])] < acc[static_cast<size_t>(S[u])]) u = t;  // ties: the oldest
      if (S[u] == i) ++new_token_dropped;
      S.erase(S.begin() + static_cast<long>(u));
    }
  }
};

// How a variant's caches differ from ours over the steps from k on: the fraction of steps whose
// caches differ, and the mean of |A ∩ B| / max(|A|, |B|).
struct Compare {
  long differ = 0, steps = 0;
  double overlap = 0.0;
  void step(const std::vector<int>& a, const std::vector<int>& b) {
    ++steps;
    differ += a != b ? 1 : 0;
    std::vector<int> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    const size_t m = std::max(a.size(), b.size());
    overlap += m ? static_cast<double>(both.size()) / static_cast<double>(m) : 1.0;
  }
  double fraction() const { return steps ? static_cast<double>(differ) / static_cast<double>(steps) : 0.0; }
  double mean_overlap() const { return steps ? overlap / static_cast<double>(steps) : 1.0; }
};

class AlgorithmVariantsCheck final : public StepCheck {
 public:
  AlgorithmVariantsCheck(const HeadInfo& h, const TraceChecksOptions& o)
      : h_(h),
        d1_(check_enabled(o, "D1")),
        d3_(check_enabled(o, "D3")),
        d4_(check_enabled(o, "D4")),
        ours_({}, h.n, h.k()),
        strict_({true, true, false}, h.n, h.k()),
        v3_({false, false, false}, h.n, h.k()),
        code_({false, true, true}, h.n, h.k()) {}

  void step(const HeadStep& s) override {
    if (!d1_ && !d3_ && !d4_) return;
    ours_.step(s.i, s.logits);
    if (d1_) strict_.step(s.i, s.logits);
    if (d3_) v3_.step(s.i, s.logits);
    if (d4_) code_.step(s.i, s.logits);
    if (s.i < h_.k()) return;
    if (d3_) cmp_v3_.step(ours_.S, v3_.S);
    if (d4_) cmp_code_.step(ours_.S, code_.S);
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    const int k = h_.k();
    if (d1_) {
      const auto size = static_cast<double>(strict_.S.size());
      auto r = head_record(h_, "D1", "Alg. 1 fill test", ClaimKind::Defect, size == k, size, k - 1);
      r.detail = {{"k", k}, {"cache_size_with_i_lt_k", size}, {"cache_size_with_i_le_k", ours_.S.size()}};
      out.push_back(std::move(r));
    }
    if (d3_) {
      const double frac = cmp_v3_.fraction();
      auto r = head_record(h_, "D3", "K_{S_{i-1}} without the new key", ClaimKind::Defect, frac == 0.0, frac);
      r.detail = {{"new_token_dropped_at_once", v3_.new_token_dropped},
                  {"new_token_dropped_at_once_ours", ours_.new_token_dropped},
                  {"mean_overlap", cmp_v3_.mean_overlap()},
                  {"steps", h_.n - k}};
      out.push_back(std::move(r));
    }
    if (d4_) {
      const double frac = cmp_code_.fraction();
      auto r = head_record(h_, "D4", "skip vs accumulate during the fill", ClaimKind::Defect, frac == 0.0, frac);
      r.detail = {{"steps", h_.n - k}, {"mean_overlap", cmp_code_.mean_overlap()}};
      out.push_back(std::move(r));
    }
  }

 private:
  const HeadInfo& h_;
  bool d1_, d3_, d4_;
  Sim ours_, strict_, v3_, code_;
  Compare cmp_v3_, cmp_code_;
};

}  // namespace

std::unique_ptr<StepCheck> algorithm_variants_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<AlgorithmVariantsCheck>(h, o);
}

}  // namespace kvo::detail
