// C1 (eviction invariants of Def 2.1/D.12) for every replayed policy and C27 (the invariants of
// the H2O code variant, docs/theory.md §1.7) for h2o.
#include <algorithm>
#include <cmath>

#include "head_data.hpp"

namespace kvo::detail {
namespace {

class InvariantsCheck final : public StepCheck {
 public:
  InvariantsCheck(const HeadInfo& h, const TraceChecksOptions& o)
      : h_(h), c1_(check_enabled(o, "C1")), c27_(check_enabled(o, "C27")) {
    for (const RunInfo& ri : h.runs) {
      C1& a = c1_runs_.emplace_back();
      a.on = c1_ && policy_traits(ri.id).budgeted;
      if (a.on) a.gone.assign(static_cast<size_t>(h.n), 0), a.prev.assign(static_cast<size_t>(h.n), 0);
      c27_runs_.emplace_back().on = c27_ && policy_traits(ri.id).h2o_code;
    }
  }

  void step(const HeadStep& s) override {
    for (size_t r = 0; r < s.runs.size(); ++r) {
      if (c1_runs_[r].on) c1_step(s.i, *s.runs[r].cur, c1_runs_[r]);
      if (c27_runs_[r].on) c27_step(s, s.runs[r], h_.runs[r].scores, c27_runs_[r]);
    }
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    for (size_t r = 0; r < h_.runs.size(); ++r) {
      const C1& a = c1_runs_[r];
      if (!a.on) continue;
      const RunInfo& run = h_.runs[r];
      auto rec = head_record(h_, "C1", run.name, run.nested ? ClaimKind::Theorem : ClaimKind::Finding, a.bad == 0,
                             static_cast<double>(a.bad), a.first);
      rec.detail = {{"over_budget", a.over},
                    {"outside_previous_cache", a.outside},
                    {"several_new", a.several},
                    {"re_entries", a.reentry},
                    {"k", h_.k()},
                    {"nested", run.nested}};
      out.push_back(std::move(rec));
    }
    for (size_t r = 0; r < h_.runs.size(); ++r) {
      const C27& a = c27_runs_[r];
      if (!a.on) continue;
      auto rec =
          head_record(h_, "C27", h_.runs[r].name, ClaimKind::Theorem, a.bad == 0, static_cast<double>(a.bad), a.first);
      rec.detail = {{"size", a.size_bad},       {"window", a.window_bad},   {"argmin", a.argmin_bad},
                    {"prefill", a.prefill_bad}, {"heavy", h_.budget.heavy}, {"recent", h_.budget.recent}};
      out.push_back(std::move(rec));
    }
  }

 private:
  struct C1 {
    bool on = false;
    std::vector<char> gone, prev;
    long bad = 0, first = -1, over = 0, outside = 0, several = 0, reentry = 0;
  };
  struct C27 {
    bool on = false;
    long bad = 0, first = -1, size_bad = 0, window_bad = 0, argmin_bad = 0, prefill_bad = 0;
  };

  void c1_step(int i, const StepRecord& s, C1& a) const {
    bool b = false;
    if (i >= h_.prompt_len - 1 && static_cast<int>(s.kept.size()) > h_.k()) b = true, ++a.over;
    int fresh = 0;
    for (int j : s.kept) {
      if (j != i && !a.prev[static_cast<size_t>(j)]) b = true, ++a.outside;
      if (!a.prev[static_cast<size_t>(j)]) ++fresh;
      if (a.gone[static_cast<size_t>(j)]) b = true, ++a.reentry;
    }
    if (fresh > 1) b = true, ++a.several;
    std::fill(a.prev.begin(), a.prev.end(), 0);
    for (int j : s.kept) a.prev[static_cast<size_t>(j)] = 1;
    for (int j : s.evicted) a.gone[static_cast<size_t>(j)] = 1;
    for (int j : s.kept) a.gone[static_cast<size_t>(j)] = 0;  // a re-entered token is back in
    if (b) {
      ++a.bad;
      if (a.first < 0) a.first = i;
    }
  }

  void c27_step(const HeadStep& hs, const RunStep& run, bool has_scores, C27& a) const {
    const int i = hs.i, P = h_.prompt_len, heavy = h_.budget.heavy, r = h_.budget.recent;
    const StepRecord& s = *run.cur;
    auto fail = [&](long& counter) {
      ++counter;
      ++a.bad;
      if (a.first < 0) a.first = i;
    };
    const int want = i < P - 1 ? i + 1 : std::min(i + 1, heavy + r);
    if (static_cast<int>(s.kept.size()) != want) fail(a.size_bad);
    if (i >= P && !s.evicted.empty()) {
      for (int u : s.evicted)
        if (u > i - r) fail(a.window_bad);
      // The victim has the smallest score among the candidates outside the window (ties: oldest).
      auto victim_is_argmin = [&](int u) {
        for (int j : s.kept)
          if (j <= i - r) {
            const double su = run.score(u), sj = run.score(j);
            if (su > sj + 1e-12 * (1.0 + std::fabs(sj)) || (su == sj && j < u)) return false;
          }
        return true;
      };
      if (has_scores)
        for (int u : s.evicted)
          if (!victim_is_argmin(u)) {
            fail(a.argmin_bad);
            break;
          }
    }
    if (i == P - 1 && P > heavy + r) {  // prefill truncation: top-h of column sums over [0, P-r) + last r
      std::vector<char> in(static_cast<size_t>(h_.n), 0);
      for (int j : s.kept) in[static_cast<size_t>(j)] = 1;
      double min_in = INFINITY, max_out = -INFINITY;
      for (int j = 0; j < P; ++j) {
        if (j >= P - r) {
          if (!in[static_cast<size_t>(j)]) fail(a.prefill_bad);
          continue;
        }
        const double c = hs.acc[static_cast<size_t>(j)];
        if (in[static_cast<size_t>(j)])
          min_in = std::min(min_in, c);
        else
          max_out = std::max(max_out, c);
      }
      if (max_out > min_in + 1e-9 * (1.0 + std::fabs(min_in))) fail(a.prefill_bad);
    }
  }

  const HeadInfo& h_;
  bool c1_, c27_;
  std::vector<C1> c1_runs_;
  std::vector<C27> c27_runs_;
};

}  // namespace

std::unique_ptr<StepCheck> invariants_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<InvariantsCheck>(h, o);
}

}  // namespace kvo::detail
