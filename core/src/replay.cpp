#include "kvo/core/replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <tuple>

#include "kvo/core/attention.hpp"
#include "kvo/core/contract_group.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/lane_sum.hpp"
#include "kvo/core/memory_limit.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/shared_budget.hpp"
#include "kvo/core/unit_bytes.hpp"
#include "kvo/core/unit_stepper.hpp"
#include "replay_units.hpp"

namespace kvo {
namespace replay_detail {

BudgetScope grouping(const ReplayOptions& o) { return o.contract ? o.contract->grouping() : o.run.budget_scope; }

bool settles_together(const ReplayOptions& o) {
  return o.run.budget_scope != BudgetScope::Head || o.contract.has_value();
}

ReplayOptions prepared(const Trace& trace, ReplayOptions o) {
  if (o.contract) {
    const EvictionContract& c = *o.contract;
    c.validate(trace.n_tokens);
    require(o.run.gqa != GqaMode::PerQueryHead,
            "a contract's units are (layer, KV head): run it with --gqa kv-mean or kv-max, not query");
    o.run = run_under_contract(o.run, c);
  }
  // A bad prompt, layer, head or budget fails here, before any work; so do bad policy parameters.
  o.run.validate(trace, SharedBudgets::Allowed);
  return o;
}

std::vector<Unit> make_units(const Trace& tr, const ReplayOptions& options) {
  const RunConfig& o = options.run;
  const BudgetScope scope = grouping(options);
  std::vector<CacheUnit> units;
  const std::vector<int> heads = o.chosen_heads(o.gqa == GqaMode::PerQueryHead ? tr.n_heads : tr.n_kv_heads);
  for (int l : o.chosen_layers(tr.n_layers)) {
    if (o.gqa == GqaMode::PerQueryHead) {
      for (int h : heads) units.push_back({l, h, {h}, units.size()});
    } else {
      const int g = tr.group_size();
      for (int kv : heads) {
        CacheUnit u{l, kv, {}, units.size()};
        for (int h = kv * g; h < (kv + 1) * g; ++h) u.heads.push_back(h);
        units.push_back(std::move(u));
      }
    }
  }
  std::vector<Unit> groups;
  for (CacheUnit& u : units) {
    const bool joins =
        !groups.empty() && (scope == BudgetScope::Model ||
                            (scope == BudgetScope::Layer && groups.back().members.front().layer == u.layer));
    if (!joins) groups.emplace_back();
    groups.back().members.push_back(std::move(u));
  }
  return groups;
}

std::unique_ptr<UnitStepper> make_stepper(const ReplayOptions& o, const CacheUnit& u,
                                          const std::vector<HeadView>& heads, int n, const Eigen::MatrixXd* dense,
                                          ResolvedBudget* budget) {
  PolicySetup setup = unit_setup(o.run, n, u.layer, u.budget_head, o.run.seed + u.index, heads.front());
  setup.group_evicts = settles_together(o);
  setup.dense = dense;
  *budget = setup.budget;
  return std::make_unique<UnitStepper>(o.run, setup, static_cast<int>(heads.size()), o.record_sets, o.record_probs);
}

GroupSettler::GroupSettler(const ReplayOptions& o, const Unit& g, std::vector<EvictionPolicy*> policies, int n) {
  if (!settles_together(o)) return;
  if (o.contract) {
    std::vector<ContractUnit> keys;
    for (const CacheUnit& u : g.members) keys.push_back({u.layer, u.budget_head});
    contract_ = std::make_unique<ContractGroup>(std::move(policies), keys, *o.contract, n);
  } else {
    group_ = std::make_unique<SharedBudgetGroup>(std::move(policies), o.run.prompt_len);
  }
}

void GroupSettler::settle(int i) {
  if (group_) group_->settle(i);
  if (contract_) contract_->settle(i);
}

}  // namespace replay_detail

namespace {

using namespace replay_detail;

// One cache unit's state while its group replays.
struct Member {
  std::vector<HeadView> views;
  Eigen::MatrixXd dense;
  std::unique_ptr<UnitStepper> stepper;
  std::vector<std::vector<double>> logits, dense_p, dense_acc;
  std::vector<HeadRow> rows;
  std::vector<StepRecord> recs;
};

void run_unit(const Trace& tr, const ReplayOptions& o, const Unit& g, std::vector<HeadReplay>& out) {
  const int n = tr.n_tokens;
  const RunConfig& run = o.run;
  std::vector<Member> ms(g.members.size());
  std::vector<EvictionPolicy*> policies;
  size_t first = 0;  // the member's first head in `out`
  for (size_t m = 0; m < ms.size(); ++m) {
    const CacheUnit& u = g.members[m];
    Member& M = ms[m];
    for (int h : u.heads) M.views.emplace_back(tr, u.layer, h);
    if (needs_dense(run.policy)) {
      // The averaged matrix and one head's dense_attention result, n x n doubles each.
      require_memory(static_cast<std::uint64_t>(n) * n * 8 * 2,
                     "policy " + make_policy(run.policy)->name() + " (the dense n x n attention of each head)");
      M.dense = dense_attention(M.views.front());
      for (size_t x = 1; x < M.views.size(); ++x) M.dense += dense_attention(M.views[x]);
      M.dense /= static_cast<double>(M.views.size());
    }
    ResolvedBudget budget;
    M.stepper = make_stepper(o, u, M.views, n, M.dense.size() ? &M.dense : nullptr, &budget);
    policies.push_back(&M.stepper->policy());
    const size_t hs = u.heads.size();
    for (size_t x = 0; x < hs; ++x) {
      HeadReplay& hr = out[first + x];
      hr.layer = u.layer;
      hr.head = u.heads[x];
      hr.budget = budget;
      hr.steps.resize(static_cast<size_t>(n));
    }
    first += hs;
    M.logits.resize(hs);
    M.dense_p.resize(hs);
    M.dense_acc.assign(hs, std::vector<double>(static_cast<size_t>(n), 0.0));
    M.rows.resize(hs);
    M.recs.resize(hs);
  }
  GroupSettler settler(o, g, std::move(policies), n);
  std::vector<int> keys;
  for (int i = 0; i < n; ++i) {
    for (Member& M : ms) {
      for (size_t x = 0; x < M.views.size(); ++x) {
        prefix_attention(M.views[x], i, keys, M.logits[x], M.dense_p[x]);  // one pass of logits serves both softmaxes
        for (int j = 0; j <= i; ++j) M.dense_acc[x][j] += M.dense_p[x][j];
        M.rows[x] = {M.logits[x], M.dense_p[x], M.dense_acc[x]};
      }
      M.stepper->observe(i, M.rows);
    }
    settler.settle(i);
    first = 0;
    for (size_t m = 0; m < ms.size(); ++m) {
      Member& M = ms[m];
      M.stepper->record(i, M.rows, M.recs);
      if (o.on_step) o.on_step(g.members[m].layer, g.members[m].budget_head, i, M.stepper->policy());
      for (size_t x = 0; x < M.views.size(); ++x) {
        HeadReplay& hr = out[first + x];
        hr.reentries += static_cast<long>(M.recs[x].reentered.size());
        hr.evictions += static_cast<long>(M.recs[x].evicted.size());
        hr.steps[static_cast<size_t>(i)] = std::move(M.recs[x]);
      }
      first += M.views.size();
    }
  }
  for (auto& hr : out) {
    double s = 0.0;
    int c = 0;
    for (int i = run.prompt_len; i < n; ++i, ++c) s += hr.steps[static_cast<size_t>(i)].retained_mass;
    hr.mean_retained_mass = c ? s / c : 1.0;
  }
}

size_t unit_heads(const Unit& g) {
  size_t h = 0;
  for (const CacheUnit& u : g.members) h += u.heads.size();
  return h;
}

}  // namespace

int replay_units(const Trace& trace, const ReplayOptions& options) {
  return static_cast<int>(make_units(trace, options).size());
}

struct ReplayPlan::Units {
  std::vector<Unit> list;
};

ReplayPlan::ReplayPlan(const Trace& trace, ReplayOptions o) : trace_(trace), o_(prepared(trace, std::move(o))) {
  auto probe = make_policy(o_.run.policy);
  name_ = probe->name();
  nested_ = probe->nested();
  auto units = std::make_shared<Units>();
  units->list = make_units(trace, o_);
  units_ = std::move(units);
}

int ReplayPlan::size() const { return static_cast<int>(units_->list.size()); }

std::string ReplayPlan::name(int unit) const {
  const Unit& g = units_->list.at(static_cast<size_t>(unit));
  const CacheUnit& u = g.members.front();
  if (g.members.size() > 1)
    return grouping(o_) == BudgetScope::Model ? "the model's shared budget"
                                              : "layer " + std::to_string(u.layer) + " shared budget";
  return "layer " + std::to_string(u.layer) +
         (u.heads.size() == 1 ? " head " + std::to_string(u.heads.front())
                              : " kv head " + std::to_string(u.budget_head));
}

std::vector<HeadReplay> ReplayPlan::run(int unit) const {
  const Unit& g = units_->list.at(static_cast<size_t>(unit));
  std::vector<HeadReplay> out(unit_heads(g));
  run_unit(trace_, o_, g, out);
  return out;
}

ReplayResult ReplayPlan::assemble(std::vector<std::vector<HeadReplay>> units) const {
  require(static_cast<int>(units.size()) == size(), "internal: replay needs one result per unit");
  ReplayResult r;
  r.id = o_.run.policy.id;
  r.policy = name_;
  r.nested = nested_;
  r.gqa = o_.run.gqa;
  r.budget_scope = o_.run.budget_scope;
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
