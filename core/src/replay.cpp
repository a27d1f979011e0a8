#include "kvo/core/replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/lane_sum.hpp"
#include "kvo/core/memory_limit.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/unit_stepper.hpp"

namespace kvo {
namespace {

struct Unit {
  int layer;
  int budget_head;         // index used for per-head budget overrides
  std::vector<int> heads;  // query heads sharing the cache
};

std::vector<Unit> make_units(const Trace& tr, const RunConfig& o) {
  std::vector<Unit> units;
  const std::vector<int> heads = o.chosen_heads(o.gqa == GqaMode::PerQueryHead ? tr.n_heads : tr.n_kv_heads);
  for (int l : o.chosen_layers(tr.n_layers)) {
    if (o.gqa == GqaMode::PerQueryHead) {
      for (int h : heads) units.push_back({l, h, {h}});
    } else {
      const int g = tr.group_size();
      for (int kv : heads) {
        Unit u{l, kv, {}};
        for (int h = kv * g; h < (kv + 1) * g; ++h) u.heads.push_back(h);
        units.push_back(std::move(u));
      }
    }
  }
  return units;
}

// Logits of query i over the whole prefix [0, i] into row, and the dense probabilities of that
// prefix into dense (uniform when every logit is -inf).
void prefix_attention(const HeadView& hv, int i, std::vector<int>& keys, std::vector<double>& row,
                      std::vector<double>& dense) {
  keys.resize(static_cast<size_t>(i) + 1);
  std::iota(keys.begin(), keys.end(), 0);
  row.resize(keys.size());
  dense.resize(keys.size());
  hv.logits(i, keys, row);
  softmax(row, dense);
}

void run_unit(const Trace& tr, const ReplayOptions& o, const Unit& u, std::uint64_t seed,
              std::vector<HeadReplay>& out) {
  const int n = tr.n_tokens;
  const RunConfig& run = o.run;
  std::vector<HeadView> views;
  for (int h : u.heads) views.emplace_back(tr, u.layer, h);
  PolicySetup setup = unit_setup(run, n, u.layer, u.budget_head, seed, views.front());
  Eigen::MatrixXd dense;
  if (needs_dense(run.policy)) {
    // The averaged matrix and one head's dense_attention result, n x n doubles each.
    require_memory(static_cast<std::uint64_t>(n) * n * 8 * 2,
                   "policy " + make_policy(run.policy)->name() + " (the dense n x n attention of each head)");
    dense = dense_attention(views.front());
    for (size_t x = 1; x < views.size(); ++x) dense += dense_attention(views[x]);
    dense /= static_cast<double>(views.size());
    setup.dense = &dense;
  }
  UnitStepper stepper(run, setup, static_cast<int>(views.size()), o.record_sets, o.record_probs);

  for (size_t x = 0; x < u.heads.size(); ++x) {
    out[x].layer = u.layer;
    out[x].head = u.heads[x];
    out[x].budget = setup.budget;
    out[x].steps.resize(static_cast<size_t>(n));
  }
  std::vector<int> keys;
  std::vector<std::vector<double>> logits(u.heads.size()), dense_p(u.heads.size());
  std::vector<std::vector<double>> dense_acc(u.heads.size(), std::vector<double>(static_cast<size_t>(n), 0.0));
  std::vector<HeadRow> rows(u.heads.size());
  std::vector<StepRecord> recs(u.heads.size());
  for (int i = 0; i < n; ++i) {
    for (size_t x = 0; x < views.size(); ++x) {
      prefix_attention(views[x], i, keys, logits[x], dense_p[x]);  // one pass of logits serves both softmaxes
      for (int j = 0; j <= i; ++j) dense_acc[x][j] += dense_p[x][j];
      rows[x] = {logits[x], dense_p[x], dense_acc[x]};
    }
    stepper.step(i, rows, recs);
    if (o.on_step) o.on_step(u.layer, u.budget_head, i, stepper.policy());
    for (size_t x = 0; x < views.size(); ++x) {
      out[x].reentries += static_cast<long>(recs[x].reentered.size());
      out[x].evictions += static_cast<long>(recs[x].evicted.size());
      out[x].steps[static_cast<size_t>(i)] = std::move(recs[x]);
    }
  }
  for (auto& hr : out) {
    double s = 0.0;
    int c = 0;
    for (int i = run.prompt_len; i < n; ++i, ++c) s += hr.steps[static_cast<size_t>(i)].retained_mass;
    hr.mean_retained_mass = c ? s / c : 1.0;
  }
}

}  // namespace

int replay_units(const Trace& trace, const ReplayOptions& options) {
  return static_cast<int>(make_units(trace, options.run).size());
}

ReplayResult replay(const Trace& trace, const ReplayOptions& o) {
  // A bad prompt, layer, head or budget fails here, before any work; so do bad policy parameters.
  o.run.validate(trace);
  const auto units = make_units(trace, o.run);
  auto probe = make_policy(o.run.policy);

  std::vector<std::vector<HeadReplay>> per_unit(units.size());
  parallel_for(static_cast<int>(units.size()), o.threads, [&](int x) {
    per_unit[x].resize(units[x].heads.size());
    run_unit(trace, o, units[x], o.run.seed + static_cast<std::uint64_t>(x), per_unit[x]);
    if (o.on_unit_done) o.on_unit_done();
  });
  ReplayResult r;
  r.id = o.run.policy.id;
  r.policy = probe->name();
  r.nested = probe->nested();
  r.gqa = o.run.gqa;
  for (auto& v : per_unit)
    for (auto& h : v) r.heads.push_back(std::move(h));
  std::sort(r.heads.begin(), r.heads.end(), [](const HeadReplay& a, const HeadReplay& b) {
    return std::tie(a.layer, a.head) < std::tie(b.layer, b.head);
  });
  return r;
}

std::vector<std::vector<int>> HeadReplay::kept_sets() const {
  std::vector<std::vector<int>> out;
  out.reserve(steps.size());
  for (const StepRecord& s : steps) out.push_back(s.kept);
  return out;
}

}  // namespace kvo
