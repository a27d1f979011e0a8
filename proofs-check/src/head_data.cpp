#include "head_data.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <numeric>

#include "kvo/core/greedy_evictor.hpp"
#include "kvo/core/memory_limit.hpp"
#include "kvo/core/policies.hpp"
#include "kvo/core/unit_stepper.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_streaming.hpp"

namespace kvo::detail {

int HeadInfo::run_index(PolicyId id) const {
  for (size_t x = 0; x < runs.size(); ++x)
    if (runs[x].id == id) return static_cast<int>(x);
  return -1;
}

HeadInfo head_info(const Trace& trace, int layer, int head, const TraceChecksOptions& o) {
  HeadInfo h;
  h.trace = &trace;
  h.layer = layer;
  h.head = head;
  h.n = trace.n_tokens;
  h.prompt_len = o.run.prompt_len;
  h.budget = o.run.budget.resolve(trace.n_tokens, layer, head);
  h.view.emplace(HeadView(trace, layer, head).with_key_tiles());
  for (const PolicyId id : o.policies)
    h.runs.push_back(
        {id, policy_name(id), make_policy(o.run.with_policy(id).policy)->nested(), policy_traits(id).exposes_scores});
  return h;
}

std::vector<int> evenly_spaced(const std::vector<int>& steps, int count) {
  std::vector<int> out;
  if (steps.empty()) return out;
  for (int t = 0; t < count; ++t) {
    const size_t x = steps.size() * static_cast<size_t>(2 * t + 1) / static_cast<size_t>(2 * count);
    if (out.empty() || out.back() != steps[x]) out.push_back(steps[x]);
  }
  return out;
}

SampledSteps sampled_steps(const HeadInfo& h, const std::vector<std::vector<int>>& evicted,
                           const TraceChecksOptions& o) {
  SampledSteps s;
  const int paper = h.run_index(PolicyId::H2OPaper);
  const int sg = paper >= 0 ? paper : (h.runs.empty() ? -1 : 0);
  if (sg >= 0) {
    std::vector<int> single;
    for (int i = std::max(h.prompt_len, 1); i < h.n; ++i)
      if (evicted[static_cast<size_t>(sg)][static_cast<size_t>(i)] == 1) single.push_back(i);
    s.small_ground = evenly_spaced(single, o.sampled_steps);
  }
  if (paper >= 0 && h.runs[static_cast<size_t>(paper)].scores && (check_enabled(o, "C5") || check_enabled(o, "C12"))) {
    std::vector<int> full;
    for (int i = 0; i < h.n; ++i)
      if (evicted[static_cast<size_t>(paper)][static_cast<size_t>(i)] > 0) full.push_back(i);
    s.scores = evenly_spaced(full, 4);
  }
  return s;
}

int base_step(const RunSeries& run, int prompt_len) {
  for (int i = std::max(prompt_len, 0); i < static_cast<int>(run.evicted.size()); ++i)
    if (run.evicted[static_cast<size_t>(i)] == 1) return i;
  return -1;
}

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

CheckRecord head_record(const HeadInfo& h, const std::string& id, const std::string& variant, ClaimKind kind,
                        bool holds, double metric, long step) {
  CheckRecord r;
  r.id = id;
  r.variant = variant;
  r.kind = kind;
  r.layer = h.layer;
  r.head = h.head;
  r.holds = holds;
  r.metric = metric;
  r.step = step;
  return r;
}

int offline_steps(const HeadInfo& h, const TraceChecksOptions& o) {
  return o.offline_tokens > 0 ? std::min(h.n, o.offline_tokens) : h.n;
}

namespace {

// Tokens a nested budgeted policy evicts at each step: nothing during the prompt, the prompt cut
// to k after its last token, then one per step once the cache is full. The sampled steps are
// chosen from this before the pass; a run that differs costs a second pass.
std::vector<int> predicted_evictions(const HeadInfo& h) {
  std::vector<int> out(static_cast<size_t>(h.n), 0);
  int size = 0;
  for (int i = 0; i < h.n; ++i) {
    ++size;
    if (i < h.prompt_len - 1) continue;
    const int drop = std::max(0, size - h.k());
    out[static_cast<size_t>(i)] = drop;
    size -= drop;
  }
  return out;
}

// The lockstep replay of every policy on one head, feeding `checks` step by step.
class HeadPass {
 public:
  HeadPass(const HeadInfo& h, const TraceChecksOptions& o, bool light) : h_(h), o_(o), light_(light) {}

  // window_at: steps whose check reads the 16 dense rows up to it.
  HeadSeries run(const std::vector<StepCheck*>& checks, const std::vector<int>& window_at, const Tamper& tamper) {
    const int n = h_.n;
    const HeadView& view = *h_.view;
    Eigen::MatrixXd dense;
    std::vector<std::unique_ptr<UnitStepper>> steppers;
    for (const RunInfo& ri : h_.runs) {
      RunConfig run = o_.run.with_policy(ri.id);
      run.seed = o_.run.seed + static_cast<std::uint64_t>(h_.layer * h_.trace->n_heads + h_.head);
      run.layers = {h_.layer};
      run.heads = {h_.head};
      PolicySetup setup = unit_setup(run, n, h_.layer, h_.head, run.seed, view);
      if (needs_dense(run.policy)) {
        if (dense.size() == 0) {
          require_memory(static_cast<std::uint64_t>(n) * n * 8,
                         "policy " + ri.name + " (the dense n x n attention of the head)");
          dense = dense_attention(view);
        }
        setup.dense = &dense;
      }
      steppers.push_back(std::make_unique<UnitStepper>(run, setup, 1, true, !light_));
    }
    const size_t R = h_.runs.size();
    HeadSeries series;
    series.top_acc.resize(static_cast<size_t>(n));
    series.runs.resize(R);
    for (size_t r = 0; r < R; ++r) {
      RunSeries& rs = series.runs[r];
      rs.evicted.resize(static_cast<size_t>(n));
      rs.v_acc.resize(static_cast<size_t>(n));
      rs.now_acc.resize(static_cast<size_t>(n));
      if (h_.runs[r].scores && !light_) {
        rs.v_score.resize(static_cast<size_t>(n));
        rs.now_score.resize(static_cast<size_t>(n));
        rs.top_score.resize(static_cast<size_t>(n));
      }
    }
    constexpr int kAhead = 4;
    std::vector<int> ahead;
    std::vector<double> lg(static_cast<size_t>(kAhead) * static_cast<size_t>(n)), a(static_cast<size_t>(n)),
        acc(static_cast<size_t>(n), 0.0);
    std::vector<double> a_edit, acc_edit, row;
    std::vector<std::vector<double>> scores_edit(R);
    std::vector<StepRecord> cur(R), prev(R);
    std::deque<std::vector<double>> window;
    std::vector<std::vector<double>> window_rows;
    HeadStep s;
    s.runs.resize(R);
    size_t next_window = 0;
    for (int i = 0; i < n; ++i) {
      const size_t len = static_cast<size_t>(i) + 1;
      if (i % kAhead == 0) {  // the logits of the next kAhead queries at once (they share reads of K)
        ahead.clear();
        for (int x = i; x < std::min(n, i + kAhead); ++x) ahead.push_back(x);
        view.prefix_logits(ahead, lg.data(), static_cast<size_t>(n));
      }
      const std::span<double> lgi(lg.data() + static_cast<size_t>(i % kAhead) * static_cast<size_t>(n), len),
          ai(a.data(), len);
      softmax(lgi, ai);
      for (size_t j = 0; j < len; ++j) acc[j] += a[j];
      const HeadRow hr{lgi, ai, std::span<const double>(acc.data(), len)};
      for (size_t r = 0; r < R; ++r) steppers[r]->step(i, std::span<const HeadRow>(&hr, 1), std::span(&cur[r], 1));
      s.i = i;
      s.logits = lgi;
      s.a = ai;
      s.acc = std::span<const double>(acc.data(), len);
      for (size_t r = 0; r < R; ++r) s.runs[r] = {&cur[r], &prev[r], scores_of(*steppers[r], h_.runs[r])};
      if (tamper) {
        a_edit.assign(a.begin(), a.begin() + static_cast<long>(len));
        acc_edit.assign(acc.begin(), acc.begin() + static_cast<long>(len));
        for (size_t r = 0; r < R; ++r) scores_edit[r].assign(s.runs[r].scores.begin(), s.runs[r].scores.end());
        StepEdit e{i, a_edit, acc_edit, cur, scores_edit};
        tamper(e);
        s.a = a_edit;
        s.acc = acc_edit;
        for (size_t r = 0; r < R; ++r)
          if (!s.runs[r].scores.empty()) s.runs[r].scores = scores_edit[r];
      }
      // The dense rows i - 15 .. i, zero above the diagonal, when a sampled step is near.
      while (next_window < window_at.size() && window_at[next_window] < i) ++next_window;
      if (next_window < window_at.size() && window_at[next_window] - i < 16) {
        window.emplace_back(static_cast<size_t>(n), 0.0);
        std::copy(s.a.begin(), s.a.end(), window.back().begin());
        while (window.size() > 16) window.pop_front();
        if (window_at[next_window] == i) {
          window_rows.assign(window.begin(), window.end());
          s.window = window_rows;
        }
      } else {
        window.clear();
      }
      record_series(s, series, row);
      for (StepCheck* c : checks) c->step(s);
      s.window = {};
      std::swap(prev, cur);
    }
    return series;
  }

 private:
  static std::span<const double> scores_of(const UnitStepper& st, const RunInfo& ri) {
    if (!ri.scores) return {};
    if (const auto* g = dynamic_cast<const GreedyEvictor*>(&st.policy())) return g->accumulated();
    if (const auto* g = dynamic_cast<const H2OPolicy*>(&st.policy())) return g->scores();
    return {};
  }

  // The series the checks read; a light pass (the sweep's, which reads only its own sums) records
  // the evictions alone.
  void record_series(const HeadStep& s, HeadSeries& series, std::vector<double>& row) const {
    const auto i = static_cast<size_t>(s.i);
    if (light_) {
      for (size_t r = 0; r < s.runs.size(); ++r)
        series.runs[r].evicted[i] = static_cast<int>(s.runs[r].cur->evicted.size());
      return;
    }
    row.assign(s.acc.begin(), s.acc.end());
    series.top_acc[i] = top_k_sum(row, h_.k());
    for (size_t r = 0; r < s.runs.size(); ++r) {
      const RunStep& rs = s.runs[r];
      RunSeries& out = series.runs[r];
      out.evicted[i] = static_cast<int>(rs.cur->evicted.size());
      out.v_acc[i] = sum_over(s.acc, rs.cur->kept);
      out.now_acc[i] = sum_over(s.acc, rs.prev->kept);
      if (out.v_score.empty()) continue;
      double v = 0.0, now = 0.0;
      for (int j : rs.cur->kept) v += rs.score(j);
      for (int j : rs.prev->kept) now += rs.score(j);
      out.v_score[i] = v;
      out.now_score[i] = now;
      row.resize(i + 1);
      for (size_t j = 0; j <= i; ++j) row[j] = rs.score(static_cast<int>(j));
      out.top_score[i] = top_k_sum(row, h_.k());
    }
  }

  const HeadInfo& h_;
  const TraceChecksOptions& o_;
  bool light_;
};

std::vector<std::unique_ptr<StepCheck>> streaming_checks(const HeadInfo& h, const TraceChecksOptions& o) {
  std::vector<std::unique_ptr<StepCheck>> c;
  c.push_back(invariants_check(h, o));
  c.push_back(normalisation_check(h, o));
  c.push_back(scores_check(h, o));
  c.push_back(udc_check(h, o));
  c.push_back(induction_check(h, o));
  c.push_back(robustness_check(h, o));
  c.push_back(ratio_check(h, o));
  c.push_back(attention_stats_check(h, o));
  c.push_back(offline_check(h, o));
  c.push_back(algorithm_variants_check(h, o));
  c.push_back(empirical_check(h, o));
  c.push_back(snapkv_check(h, o));
  c.push_back(sinks_check(h, o));
  c.push_back(persistence_check(h, o));
  c.push_back(tova_premise_check(h, o));
  return c;
}

std::vector<std::unique_ptr<StepCheck>> sampled_checks(const HeadInfo& h, const TraceChecksOptions& o,
                                                       const SampledSteps& s) {
  std::vector<std::unique_ptr<StepCheck>> c;
  c.push_back(scores_sampled_check(h, o, s.scores));
  c.push_back(small_ground_check(h, o, s.small_ground));
  return c;
}

std::vector<StepCheck*> raw(const std::vector<std::unique_ptr<StepCheck>>& a,
                            const std::vector<std::unique_ptr<StepCheck>>& b = {}) {
  std::vector<StepCheck*> out;
  for (const auto& c : a) out.push_back(c.get());
  for (const auto& c : b) out.push_back(c.get());
  return out;
}

}  // namespace

namespace {

// The sweep's sums along the stream; then the offline optimum on the head's first offline_steps
// steps, by column generation on recomputed attention rows.
class SweepCollector final : public StepCheck {
 public:
  SweepCollector(const HeadInfo& h, const TraceChecksOptions& o) : h_(h), m_(offline_steps(h, o)), cell_{} {
    cell_.policy.assign(h.runs.size(), 0.0);
    values_.assign(h.runs.size(), 0.0);
  }
  void step(const HeadStep& s) override {
    row_.assign(s.a.begin(), s.a.end());
    cell_.stat += top_k_sum(row_, h_.k()) / h_.n;
    for (size_t r = 0; r < s.runs.size(); ++r)  // schedule values, one running sum in step order
      for (int j : s.runs[r].cur->kept) values_[r] += s.a[static_cast<size_t>(j)];
  }
  // OPT_dyn is C19's when that check solved the same problem in the same pass (extras.opt_dyn).
  void finish(const HeadSeries&, std::vector<CheckRecord>&, HeadExtras& extras) override {
    double opt = extras.opt_dyn;
    if (std::isnan(opt)) {
      const AttentionWeightRows head(*h_.view);
      const PrefixWeightRows rows(head, m_);
      opt = solve_offline_streaming(rows, std::min(h_.k(), m_), 0).value;
    }
    cell_.dyn = opt / m_;
    for (size_t r = 0; r < values_.size(); ++r) cell_.policy[r] = values_[r] / h_.n;
  }
  SweepCell cell() const { return cell_; }

 private:
  const HeadInfo& h_;
  int m_;
  SweepCell cell_;
  std::vector<double> values_, row_;
};

}  // namespace

HeadResult check_head(const Trace& trace, int layer, int head, const TraceChecksOptions& o, const Tamper& tamper,
                      bool sweep_cell) {
  const HeadInfo h = head_info(trace, layer, head, o);
  const std::vector<std::vector<int>> guess(h.runs.size(), predicted_evictions(h));
  HeadResult res;
  res.sampled = sampled_steps(h, guess, o);
  auto streaming = streaming_checks(h, o);
  if (sweep_cell) streaming.push_back(std::make_unique<SweepCollector>(h, o));  // finishes after C19's solve
  auto sampled = sampled_checks(h, o, res.sampled);
  HeadPass pass(h, o, false);
  HeadSeries series = pass.run(raw(streaming, sampled), res.sampled.small_ground, tamper);
  for (const RunSeries& rs : series.runs) res.evicted.push_back(rs.evicted);
  const SampledSteps actual = sampled_steps(h, res.evicted, o);
  if (!(actual == res.sampled)) {  // mispredicted: the sampled checks again, at the right steps
    res.sampled = actual;
    res.passes = 2;
    sampled = sampled_checks(h, o, actual);
    pass.run(raw(sampled), actual.small_ground, tamper);
  }
  for (const auto& c : streaming) c->finish(series, res.records, res.extras);
  for (const auto& c : sampled) c->finish(series, res.records, res.extras);
  if (sweep_cell) res.sweep = static_cast<const SweepCollector&>(*streaming.back()).cell();
  return res;
}

SweepCell sweep_head(const Trace& trace, int layer, int head, const TraceChecksOptions& o) {
  const HeadInfo h = head_info(trace, layer, head, o);
  SweepCollector c(h, o);
  HeadPass pass(h, o, true);
  const HeadSeries series = pass.run({&c}, {}, nullptr);
  std::vector<CheckRecord> none;
  HeadExtras extras;
  c.finish(series, none, extras);
  return c.cell();
}

}  // namespace kvo::detail
