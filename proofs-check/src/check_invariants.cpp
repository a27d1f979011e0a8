// C1 (eviction invariants of Def 2.1/D.12) for every replayed policy and C27 (the invariants of
// the H2O code variant, theory note §1.7) for h2o.
#include <algorithm>
#include <cmath>

#include "head_data.hpp"

namespace kvo::detail {

void check_invariants(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out) {
  const int k = h.k(), P = h.prompt_len;
  if (check_enabled(o, "C1")) {
    for (const auto& run : h.runs) {
      if (!policy_traits(run.id).budgeted) continue;
      std::vector<char> gone(static_cast<size_t>(h.n), 0);
      std::vector<char> prev(static_cast<size_t>(h.n), 0);
      long bad = 0, first = -1, over = 0, outside = 0, several = 0, reentry = 0;
      for (int i = 0; i < h.n; ++i) {
        const StepRecord& s = run.replay.steps[static_cast<size_t>(i)];
        bool b = false;
        if (i >= P - 1 && static_cast<int>(s.kept.size()) > k) b = true, ++over;
        int fresh = 0;
        for (int j : s.kept) {
          if (j != i && !prev[static_cast<size_t>(j)]) b = true, ++outside;
          if (!prev[static_cast<size_t>(j)]) ++fresh;
          if (gone[static_cast<size_t>(j)]) b = true, ++reentry;
        }
        if (fresh > 1) b = true, ++several;
        std::fill(prev.begin(), prev.end(), 0);
        for (int j : s.kept) prev[static_cast<size_t>(j)] = 1;
        for (int j : s.evicted) gone[static_cast<size_t>(j)] = 1;
        for (int j : s.kept) gone[static_cast<size_t>(j)] = 0;  // a re-entered token is back in
        if (b) {
          ++bad;
          if (first < 0) first = i;
        }
      }
      auto r = head_record(h, "C1", run.name, run.nested ? ClaimKind::Theorem : ClaimKind::Finding, bad == 0,
                           static_cast<double>(bad), first);
      r.detail = {{"over_budget", over},
                  {"outside_previous_cache", outside},
                  {"several_new", several},
                  {"re_entries", reentry},
                  {"k", k},
                  {"nested", run.nested}};
      out.push_back(std::move(r));
    }
  }
  if (!check_enabled(o, "C27")) return;
  for (const auto& run : h.runs) {
    if (!policy_traits(run.id).h2o_code) continue;
    const int heavy = h.budget.heavy, r = h.budget.recent;
    long bad = 0, first = -1, size_bad = 0, window_bad = 0, argmin_bad = 0, prefill_bad = 0;
    auto fail = [&](int i, long& counter) {
      ++counter;
      ++bad;
      if (first < 0) first = i;
    };
    for (int i = 0; i < h.n; ++i) {
      const StepRecord& s = run.replay.steps[static_cast<size_t>(i)];
      const int want = i < P - 1 ? i + 1 : std::min(i + 1, heavy + r);
      if (static_cast<int>(s.kept.size()) != want) fail(i, size_bad);
      if (i >= P && !s.evicted.empty()) {
        for (int u : s.evicted)
          if (u > i - r) fail(i, window_bad);
        // The victim has the smallest score among the candidates outside the window (ties: oldest).
        auto victim_is_argmin = [&](int u) {
          for (int j : s.kept)
            if (j <= i - r) {
              const double su = run.scores(i, u), sj = run.scores(i, j);
              if (su > sj + 1e-12 * (1.0 + std::fabs(sj)) || (su == sj && j < u)) return false;
            }
          return true;
        };
        if (run.scores.size() > 0)
          for (int u : s.evicted)
            if (!victim_is_argmin(u)) {
              fail(i, argmin_bad);
              break;
            }
      }
      if (i == P - 1 && P > heavy + r) {  // prefill truncation: top-h of column sums over [0, P-r) + last r
        std::vector<char> in(static_cast<size_t>(h.n), 0);
        for (int j : s.kept) in[static_cast<size_t>(j)] = 1;
        double min_in = INFINITY, max_out = -INFINITY;
        for (int j = 0; j < P; ++j) {
          if (j >= P - r) {
            if (!in[static_cast<size_t>(j)]) fail(i, prefill_bad);
            continue;
          }
          const double c = h.acc(P - 1, j);
          if (in[static_cast<size_t>(j)])
            min_in = std::min(min_in, c);
          else
            max_out = std::max(max_out, c);
        }
        if (max_out > min_in + 1e-9 * (1.0 + std::fabs(min_in))) fail(i, prefill_bad);
      }
    }
    auto rec = head_record(h, "C27", run.name, ClaimKind::Theorem, bad == 0, static_cast<double>(bad), first);
    rec.detail = {{"size", size_bad},       {"window", window_bad}, {"argmin", argmin_bad},
                  {"prefill", prefill_bad}, {"heavy", heavy},       {"recent", r}};
    out.push_back(std::move(rec));
  }
}

}  // namespace kvo::detail
