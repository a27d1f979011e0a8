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

namespace kvo {
namespace {

struct Unit {
  int layer;
  int budget_head;         // index used for per-head budget overrides
  std::vector<int> heads;  // query heads sharing the cache
};

std::vector<int> chosen_layers(const Trace& tr, const ReplayOptions& o) {
  if (o.layers.empty()) {
    std::vector<int> all(static_cast<size_t>(tr.n_layers));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  for (int l : o.layers)
    require(l >= 0 && l < tr.n_layers,
            "layer " + std::to_string(l) + " is not in the trace (it has " + std::to_string(tr.n_layers) + ")");
  return o.layers;
}

std::vector<Unit> make_units(const Trace& tr, const ReplayOptions& o) {
  std::vector<Unit> units;
  const int unit_heads = o.gqa == GqaMode::PerQueryHead ? tr.n_heads : tr.n_kv_heads;
  for (int h : o.heads)
    require(h >= 0 && h < unit_heads,
            "head " + std::to_string(h) + " is not in the trace (it has " + std::to_string(unit_heads) + ")");
  auto wanted = [&](int h) { return o.heads.empty() || std::find(o.heads.begin(), o.heads.end(), h) != o.heads.end(); };
  for (int l : chosen_layers(tr, o)) {
    if (o.gqa == GqaMode::PerQueryHead) {
      for (int h = 0; h < tr.n_heads; ++h)
        if (wanted(h)) units.push_back({l, h, {h}});
    } else {
      const int g = tr.group_size();
      for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
        if (!wanted(kv)) continue;
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
  std::vector<HeadView> views;
  for (int h : u.heads) views.emplace_back(tr, u.layer, h);
  auto policy = make_policy(o.policy);
  PolicySetup setup;
  setup.n = n;
  setup.budget = o.policy.name == "full" ? ResolvedBudget{n, n, 0} : o.budget.resolve(n, u.layer, u.budget_head);
  setup.prompt_len = o.prompt_len;
  setup.seed = seed;
  setup.head = &views.front();
  Eigen::MatrixXd dense;
  if (policy->needs_dense()) {
    // The averaged matrix and one head's dense_attention result, n x n doubles each.
    require_memory(static_cast<std::uint64_t>(n) * n * 8 * 2,
                   "policy " + policy->name() + " (the dense n x n attention of each head)");
    dense = dense_attention(views.front());
    for (size_t x = 1; x < views.size(); ++x) dense += dense_attention(views[x]);
    dense /= static_cast<double>(views.size());
    setup.dense = &dense;
  }
  policy->begin(setup);

  for (size_t x = 0; x < u.heads.size(); ++x) {
    out[x].layer = u.layer;
    out[x].head = u.heads[x];
    out[x].budget = setup.budget;
    out[x].steps.resize(static_cast<size_t>(n));
  }
  std::vector<char> was(static_cast<size_t>(n), 0);  // membership of S_{i-1} ∪ {i}
  std::vector<int> prev;
  std::vector<int> keys;
  std::vector<double> lg, agg;
  std::vector<std::vector<double>> probs(u.heads.size()), rows(u.heads.size()), dense_p(u.heads.size());
  std::vector<std::vector<double>> dense_acc(u.heads.size(), std::vector<double>(static_cast<size_t>(n), 0.0));
  for (int i = 0; i < n; ++i) {
    const std::vector<int> att = policy->attended(i);
    require(!att.empty() && att.front() >= 0 && att.back() <= i && std::is_sorted(att.begin(), att.end()),
            "policy " + policy->name() + " returned an invalid attended set at step " + std::to_string(i));
    lg.resize(att.size());
    agg.assign(att.size(), o.gqa == GqaMode::KvMax ? -std::numeric_limits<double>::infinity() : 0.0);
    for (size_t x = 0; x < views.size(); ++x) {
      probs[x].resize(att.size());
      prefix_attention(views[x], i, keys, rows[x], dense_p[x]);  // one pass of logits serves both softmaxes
      for (int j = 0; j <= i; ++j) dense_acc[x][j] += dense_p[x][j];
      for (size_t t = 0; t < att.size(); ++t) lg[t] = rows[x][static_cast<size_t>(att[t])];
      softmax(lg, probs[x]);
      for (size_t t = 0; t < att.size(); ++t)
        agg[t] = o.gqa == GqaMode::KvMax ? std::max(agg[t], probs[x][t]) : agg[t] + probs[x][t];
    }
    if (o.gqa != GqaMode::KvMax)
      for (double& p : agg) p /= static_cast<double>(views.size());
    policy->observe(i, att, agg);
    if (o.on_step) o.on_step(u.layer, u.budget_head, i, *policy);
    const std::vector<int>& kept = policy->cache();

    for (int j : prev) was[j] = 1;
    was[i] = 1;
    StepRecord base;
    for (int j : kept) {
      if (!was[j]) base.reentered.push_back(j);
      was[j] = 2;
    }
    for (int j : prev)
      if (was[j] == 1) base.evicted.push_back(j);
    if (was[i] == 1) base.evicted.push_back(i);
    for (int j : prev) was[j] = 0;
    was[i] = 0;
    for (int j : kept) was[j] = 0;
    if (o.record_sets) {
      base.attended = att;
      base.kept = kept;
    }
    for (size_t x = 0; x < views.size(); ++x) {
      StepRecord& rec = out[x].steps[static_cast<size_t>(i)];
      rec = base;
      const double mass = lane_sum(att.size(), [&](size_t t) { return dense_p[x][static_cast<size_t>(att[t])]; });
      rec.retained_mass = std::min(mass, 1.0);
      for (int j : kept) rec.accumulated += dense_acc[x][j];
      if (o.record_probs) rec.probs = probs[x];
      out[x].reentries += static_cast<long>(base.reentered.size());
      out[x].evictions += static_cast<long>(base.evicted.size());
    }
    prev = kept;
  }
  for (auto& hr : out) {
    double s = 0.0;
    int c = 0;
    for (int i = o.prompt_len; i < n; ++i, ++c) s += hr.steps[static_cast<size_t>(i)].retained_mass;
    hr.mean_retained_mass = c ? s / c : 1.0;
  }
}

}  // namespace

GqaMode parse_gqa(const std::string& name) {
  if (name == "query") return GqaMode::PerQueryHead;
  if (name == "kv-mean") return GqaMode::KvMean;
  if (name == "kv-max") return GqaMode::KvMax;
  throw Error("unknown GQA mode '" + name + "' (expected query, kv-mean or kv-max)");
}

std::string to_string(GqaMode m) {
  switch (m) {
    case GqaMode::PerQueryHead:
      return "query";
    case GqaMode::KvMean:
      return "kv-mean";
    case GqaMode::KvMax:
      return "kv-max";
  }
  return "?";
}

int replay_units(const Trace& trace, const ReplayOptions& options) {
  return static_cast<int>(make_units(trace, options).size());
}

ReplayResult replay(const Trace& trace, const ReplayOptions& o) {
  require(o.prompt_len >= 0 && o.prompt_len <= trace.n_tokens,
          "prompt length " + std::to_string(o.prompt_len) + " is outside [0, " + std::to_string(trace.n_tokens) + "]");
  const auto units = make_units(trace, o);
  // Resolve every budget up front so that a bad budget fails before any work.
  if (o.policy.name != "full")
    for (const auto& u : units) o.budget.resolve(trace.n_tokens, u.layer, u.budget_head);
  make_policy(o.policy);  // unknown names fail here, once

  std::vector<std::vector<HeadReplay>> per_unit(units.size());
  parallel_for(static_cast<int>(units.size()), o.threads, [&](int x) {
    per_unit[x].resize(units[x].heads.size());
    run_unit(trace, o, units[x], o.seed + static_cast<std::uint64_t>(x), per_unit[x]);
    if (o.on_unit_done) o.on_unit_done();
  });
  ReplayResult r;
  auto probe = make_policy(o.policy);
  r.policy = probe->name();
  r.nested = probe->nested();
  r.gqa = o.gqa;
  for (auto& v : per_unit)
    for (auto& h : v) r.heads.push_back(std::move(h));
  std::sort(r.heads.begin(), r.heads.end(), [](const HeadReplay& a, const HeadReplay& b) {
    return std::tie(a.layer, a.head) < std::tie(b.layer, b.head);
  });
  return r;
}

}  // namespace kvo
