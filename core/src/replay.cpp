#include "kvo/core/replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <tuple>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/lane_sum.hpp"
#include "kvo/core/memory_limit.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/unit_bytes.hpp"
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

struct ReplayPlan::Units {
  std::vector<Unit> list;
};

ReplayPlan::ReplayPlan(const Trace& trace, ReplayOptions o) : trace_(trace), o_(std::move(o)) {
  // A bad prompt, layer, head or budget fails here, before any work; so do bad policy parameters.
  o_.run.validate(trace);
  auto probe = make_policy(o_.run.policy);
  name_ = probe->name();
  nested_ = probe->nested();
  auto units = std::make_shared<Units>();
  units->list = make_units(trace, o_.run);
  units_ = std::move(units);
}

int ReplayPlan::size() const { return static_cast<int>(units_->list.size()); }

std::string ReplayPlan::name(int unit) const {
  const Unit& u = units_->list.at(static_cast<size_t>(unit));
  return "layer " + std::to_string(u.layer) +
         (u.heads.size() == 1 ? " head " + std::to_string(u.heads.front())
                              : " kv head " + std::to_string(u.budget_head));
}

std::vector<HeadReplay> ReplayPlan::run(int unit) const {
  const Unit& u = units_->list.at(static_cast<size_t>(unit));
  std::vector<HeadReplay> out(u.heads.size());
  run_unit(trace_, o_, u, o_.run.seed + static_cast<std::uint64_t>(unit), out);
  return out;
}

ReplayResult ReplayPlan::assemble(std::vector<std::vector<HeadReplay>> units) const {
  require(static_cast<int>(units.size()) == size(), "internal: replay needs one result per unit");
  ReplayResult r;
  r.id = o_.run.policy.id;
  r.policy = name_;
  r.nested = nested_;
  r.gqa = o_.run.gqa;
  for (auto& v : units)
    for (auto& h : v) r.heads.push_back(std::move(h));
  std::stable_sort(r.heads.begin(), r.heads.end(), [](const HeadReplay& a, const HeadReplay& b) {
    return std::tie(a.layer, a.head) < std::tie(b.layer, b.head);
  });
  return r;
}

std::string ReplayPlan::run_bytes(int unit) const { return encode_heads(run(unit)); }

ReplayResult ReplayPlan::assemble_bytes(const std::vector<std::string>& units) const {
  std::vector<std::vector<HeadReplay>> decoded;
  decoded.reserve(units.size());
  for (const auto& b : units) decoded.push_back(decode_heads(b));
  return assemble(std::move(decoded));
}

std::vector<std::vector<int>> HeadReplay::kept_sets() const {
  std::vector<std::vector<int>> out;
  out.reserve(steps.size());
  for (const StepRecord& s : steps) out.push_back(s.kept);
  return out;
}

ReplayResult replay(const Trace& trace, const ReplayOptions& o) {
  const ReplayPlan plan(trace, o);
  std::vector<std::vector<HeadReplay>> per_unit(static_cast<size_t>(plan.size()));
  parallel_for(plan.size(), o.threads, [&](int x) {
    per_unit[static_cast<size_t>(x)] = plan.run(x);
    if (o.on_unit_done) o.on_unit_done();
  });
  return plan.assemble(std::move(per_unit));
}

namespace {
nlohmann::json step_json(const StepRecord& s) {
  return {{"a", s.attended}, {"k", s.kept},          {"e", s.evicted},    {"r", s.reentered},
          {"p", s.probs},    {"m", s.retained_mass}, {"c", s.accumulated}};
}
}  // namespace

std::string encode_heads(const std::vector<HeadReplay>& heads) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& h : heads) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : h.steps) steps.push_back(step_json(s));
    a.push_back({{"layer", h.layer},
                 {"head", h.head},
                 {"budget", {h.budget.total, h.budget.heavy, h.budget.recent}},
                 {"steps", steps},
                 {"reentries", h.reentries},
                 {"evictions", h.evictions},
                 {"mean_retained_mass", h.mean_retained_mass}});
  }
  return to_unit_bytes(a);
}

std::vector<HeadReplay> decode_heads(const std::string& bytes) {
  std::vector<HeadReplay> out;
  try {
    const nlohmann::json a = from_unit_bytes(bytes, "a replay result");
    for (const auto& j : a) {
      HeadReplay h;
      h.layer = j.at("layer").get<int>();
      h.head = j.at("head").get<int>();
      const auto& b = j.at("budget");
      h.budget = {b.at(0).get<int>(), b.at(1).get<int>(), b.at(2).get<int>()};
      for (const auto& s : j.at("steps")) {
        StepRecord r;
        s.at("a").get_to(r.attended);
        s.at("k").get_to(r.kept);
        s.at("e").get_to(r.evicted);
        s.at("r").get_to(r.reentered);
        for (const auto& p : s.at("p")) r.probs.push_back(json_number(p));
        r.retained_mass = json_number(s.at("m"));
        r.accumulated = json_number(s.at("c"));
        h.steps.push_back(std::move(r));
      }
      h.reentries = j.at("reentries").get<long>();
      h.evictions = j.at("evictions").get<long>();
      h.mean_retained_mass = json_number(j.at("mean_retained_mass"));
      out.push_back(std::move(h));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("a replay result is not readable: ") + e.what());
  }
  return out;
}

}  // namespace kvo
