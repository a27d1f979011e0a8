#include "head_data.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "kvo/core/greedy_evictor.hpp"
#include "kvo/core/policies.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "trajectory.hpp"

namespace kvo::detail {

int PolicyRun::first_eviction() const {
  for (size_t i = 0; i < replay.steps.size(); ++i)
    if (!replay.steps[i].evicted.empty()) return static_cast<int>(i);
  return -1;
}

const PolicyRun* HeadData::run(PolicyId id) const {
  for (const auto& r : runs)
    if (r.id == id) return &r;
  return nullptr;
}

HeadData build_head(const Trace& trace, int layer, int head, const TraceChecksOptions& o, bool light) {
  HeadData h;
  h.trace = &trace;
  h.layer = layer;
  h.head = head;
  h.n = trace.n_tokens;
  h.prompt_len = o.run.prompt_len;
  h.budget = o.run.budget.resolve(trace.n_tokens, layer, head);
  h.view.emplace(trace, layer, head);
  h.a = dense_attention(*h.view);
  if (!light) h.acc = Eigen::MatrixXd::Zero(h.n, h.n);
  for (int i = 0; i < h.n && !light; ++i) {
    if (i > 0) h.acc.row(i).head(i) = h.acc.row(i - 1).head(i);
    h.acc.row(i).head(i + 1) += h.a.row(i).head(i + 1);
  }
  for (const PolicyId id : o.policies) {
    PolicyRun run;
    run.id = id;
    ReplayOptions ro;
    ro.run = o.run.with_policy(id);
    ro.run.seed = o.run.seed + static_cast<std::uint64_t>(layer * trace.n_heads + head);
    ro.run.layers = {layer};
    ro.run.heads = {head};
    ro.record_sets = true;
    ro.record_probs = !light;
    ro.threads = 1;
    const bool snapshot = !light && policy_traits(id).exposes_scores;
    if (snapshot) {
      run.scores = Eigen::MatrixXd::Zero(h.n, h.n);
      ro.on_step = [&run](int, int, int i, const EvictionPolicy& p) {
        const std::vector<double>* s = nullptr;
        if (const auto* g = dynamic_cast<const GreedyEvictor*>(&p)) s = &g->accumulated();
        if (const auto* g = dynamic_cast<const H2OPolicy*>(&p)) s = &g->scores();
        if (s == nullptr) return;
        for (int j = 0; j <= i && j < static_cast<int>(s->size()); ++j) run.scores(i, j) = (*s)[static_cast<size_t>(j)];
      };
    }
    ReplayResult r = replay(trace, ro);
    run.name = policy_name(id);
    run.nested = r.nested;
    run.replay = std::move(r.heads.front());
    h.runs.push_back(std::move(run));
  }
  return h;
}

Trajectory trajectory_of(const HeadData& h) {
  Trajectory t;
  t.s0 = std::max(h.k(), h.prompt_len - 1);
  t.thr = 1.0 / (10.0 * h.n);
  t.optA = top_k_row_sums(h.acc, h.k());
  t.paper = h.run(PolicyId::H2OPaper);
  if (t.paper && t.paper->scores.size()) t.optC = top_k_row_sums(t.paper->scores, h.k());
  return t;
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

std::vector<int> eviction_steps(const PolicyRun& run) {
  std::vector<int> out;
  for (size_t i = 0; i < run.replay.steps.size(); ++i)
    if (!run.replay.steps[i].evicted.empty()) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> small_ground_steps(const HeadData& h, const PolicyRun& run, const TraceChecksOptions& o) {
  std::vector<int> single;
  for (int i = std::max(h.prompt_len, 1); i < h.n; ++i)
    if (run.replay.steps[static_cast<size_t>(i)].evicted.size() == 1) single.push_back(i);
  return evenly_spaced(single, o.sampled_steps);
}

CheckRecord head_record(const HeadData& h, const std::string& id, const std::string& variant, ClaimKind kind,
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

}  // namespace kvo::detail
