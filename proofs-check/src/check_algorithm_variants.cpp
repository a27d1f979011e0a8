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

struct Sim {
  std::vector<std::vector<int>> kept;
  long new_token_dropped = 0;  // steps where the new token was evicted at once
};

Sim simulate(const HeadView& view, int n, int k, const Variant& v) {
  Sim out;
  std::vector<int> S;
  std::vector<double> acc(static_cast<size_t>(n), 0.0), lg, p;
  for (int i = 0; i < n; ++i) {
    const bool fill = v.strict_fill ? i + 1 < k : i + 1 <= k;
    std::vector<int> att = S;
    if (v.include_self || att.empty()) att.push_back(i);
    if (!fill || v.accumulate_fill) {
      lg.resize(att.size());
      p.resize(att.size());
      view.logits(i, att, lg);
      softmax(lg, p);
      for (size_t t = 0; t < att.size(); ++t) acc[static_cast<size_t>(att[t])] += p[t];
    }
    S.push_back(i);
    if (!fill) {
      size_t u = 0;
      for (size_t t = 1; t < S.size(); ++t)
        if (acc[static_cast<size_t>(S[t])] < acc[static_cast<size_t>(S[u])]) u = t;  // ties: the oldest
      if (S[u] == i) ++out.new_token_dropped;
      S.erase(S.begin() + static_cast<long>(u));
    }
    out.kept.push_back(S);
  }
  return out;
}

double differing(const Sim& a, const Sim& b, int from) {
  long d = 0, c = 0;
  for (size_t i = static_cast<size_t>(from); i < a.kept.size(); ++i, ++c) d += a.kept[i] != b.kept[i] ? 1 : 0;
  return c ? static_cast<double>(d) / static_cast<double>(c) : 0.0;
}

// Mean over steps of |A ∩ B| / max(|A|, |B|): how much of the cache two variants share.
double overlap(const Sim& a, const Sim& b, int from) {
  double s = 0.0;
  long c = 0;
  for (size_t i = static_cast<size_t>(from); i < a.kept.size(); ++i, ++c) {
    std::vector<int> both;
    std::set_intersection(a.kept[i].begin(), a.kept[i].end(), b.kept[i].begin(), b.kept[i].end(),
                          std::back_inserter(both));
    const size_t m = std::max(a.kept[i].size(), b.kept[i].size());
    s += m ? static_cast<double>(both.size()) / static_cast<double>(m) : 1.0;
  }
  return c ? s / static_cast<double>(c) : 1.0;
}

}  // namespace

void check_algorithm_variants(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out) {
  const bool d1 = check_enabled(o, "D1"), d3 = check_enabled(o, "D3"), d4 = check_enabled(o, "D4");
  if (!d1 && !d3 && !d4) return;
  const int k = h.k();
  const Sim ours = simulate(*h.view, h.n, k, {});
  if (d1) {
    const Sim strict = simulate(*h.view, h.n, k, {true, true, false});
    const auto size = static_cast<double>(strict.kept.back().size());
    auto r = head_record(h, "D1", "Alg. 1 fill test", ClaimKind::Defect, size == k, size, k - 1);
    r.detail = {{"k", k}, {"cache_size_with_i_lt_k", size}, {"cache_size_with_i_le_k", ours.kept.back().size()}};
    out.push_back(std::move(r));
  }
  if (d3) {
    const Sim v3 = simulate(*h.view, h.n, k, {false, false, false});
    const double frac = differing(ours, v3, k);
    auto r = head_record(h, "D3", "K_{S_{i-1}} without the new key", ClaimKind::Defect, frac == 0.0, frac);
    r.detail = {{"new_token_dropped_at_once", v3.new_token_dropped},
                {"new_token_dropped_at_once_ours", ours.new_token_dropped},
                {"mean_overlap", overlap(ours, v3, k)},
                {"steps", h.n - k}};
    out.push_back(std::move(r));
  }
  if (d4) {
    const Sim code = simulate(*h.view, h.n, k, {false, true, true});
    const double frac = differing(ours, code, k);
    auto r = head_record(h, "D4", "skip vs accumulate during the fill", ClaimKind::Defect, frac == 0.0, frac);
    r.detail = {{"steps", h.n - k}, {"mean_overlap", overlap(ours, code, k)}};
    out.push_back(std::move(r));
  }
}

}  // namespace kvo::detail
