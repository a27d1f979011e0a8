// `oracle contract`: the policies obey the contract in replay (their schedules as end steps, O(n)
// per unit), then one pass over the units computes each unit's rewards once and from them the
// per-head optimum, every policy's value and, through solve_contract, the contract's optimum.
#include "kvo/oracle/contract_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>

#include "kvo/core/error.hpp"
#include "kvo/core/memory_limit.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/replay_lockstep.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/core/text_file.hpp"
#include "kvo/oracle/contract_optimum.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/shared_decoding.hpp"
#include "kvo/report/svg_plot.hpp"

namespace kvo {
namespace {

std::string describe(const EvictionContract& c) {
  std::string s = kept_sets_name(c.kept_sets) + " kept sets, budgets per " +
                  (c.budget_scope == BudgetScope::Head ? std::string("set") : budget_scope_name(c.budget_scope));
  if (c.sinks) s += ", " + std::to_string(c.sinks) + " sinks";
  if (c.recent) s += ", window " + std::to_string(c.recent);
  if (c.page_size > 1) s += ", pages of " + std::to_string(c.page_size);
  if (c.chunk) s += ", the prompt of " + std::to_string(c.prompt_len) + " in chunks of " + std::to_string(c.chunk);
  if (c.interval)
    s +=
        ", compressed every " + std::to_string(c.interval) + " steps after a prompt of " + std::to_string(c.prompt_len);
  if (c.delay) s += ", evictions " + std::to_string(c.delay) + " steps after their decision";
  if (c.admission_only) s += ", admission only";
  return s;
}

}  // namespace

double contract_schedule_value(const Eigen::MatrixXd& w, const std::vector<int>& end, const EvictionContract& c) {
  const int n = static_cast<int>(w.rows());
  require(static_cast<int>(end.size()) == n, "internal: a schedule needs one end per token");
  double v = 0.0;
  for (int j = 0; j < n; ++j) {
    const int e = end[static_cast<size_t>(j)];
    const int last = c.compresses() ? std::min(e + 1, n - 1) : e;  // the query before a compression sees it
    for (int i = j; i <= last; ++i) v += w(i, j);
  }
  return v;
}

void ContractRequest::validate() const {
  require(!contracts.empty(), "contract: give the engine's contract document (a JSON file)");
  for (const std::string& c : contracts) require(!c.empty(), "contract: an empty document name");
  for (const std::string& b : budgets) Amount::parse(b);
  for (PolicyId p : policies)
    require(policy_traits(p).prefill_score,
            "policies: " + policy_name(p) + " has no per-token score to evict by under a contract (" +
                policy_names_where([](const PolicyTraits& t) { return t.prefill_score; }) + " have one)");
}

const Schema<ContractRequest>& ContractRequest::schema() {
  using R = ContractRequest;
  static const Schema<R> schema(
      "contract request",
      {member(&R::contracts, {.name = "contract",
                              .help = "an engine's contract: a JSON file (docs/engines.md); repeat it, or give a "
                                      "comma-separated list, for several"}),
       member(&R::budgets, {.name = "budgets",
                            .help = "budgets replacing the contract's: tokens a kept set holds, or shares of n "
                                    "(comma-separated; default: the contract's)"}),
       member(&R::policies, {.name = "policies", .help = "policies obeying the contract (comma-separated)"}),
       member(&R::threads, {.name = "threads", .help = "threads (0: all cores)", .cli = false})});
  return schema;
}

std::vector<nlohmann::json> ContractRequest::documents() const {
  std::vector<nlohmann::json> out;
  for (const std::string& contract : contracts) out.push_back(json_text_or_file(contract, "contract"));
  return out;
}

ContractResult run_contract(const Trace& tr, const ContractRequest& req, const std::string& name) {
  req.validate();
  const int n = tr.n_tokens, L = tr.n_layers, H = tr.n_kv_heads;
  const size_t U = static_cast<size_t>(L) * static_cast<size_t>(H);
  ContractResult out;
  out.trace = name;
  out.documents = req.documents();
  out.n = n;
  out.layers = L;
  out.kv_heads = H;
  std::vector<int> budgets;
  for (const std::string& b : req.budgets) budgets.push_back(Amount::parse(b).resolve(n));
  // Every (contract, budget) row read and checked before any work.
  std::vector<ContractRow> rows;
  std::vector<ContractUnit> units;
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) units.push_back({l, h});
  size_t widest = 1;
  for (size_t b = 0; b < std::max<size_t>(1, budgets.size()); ++b)
    for (size_t d = 0; d < out.documents.size(); ++d) {
      const EngineContract e =
          read_engine_contract(out.documents[d], n, tr.prompt_len, budgets.empty() ? 0 : budgets[b]);
      ContractRow row;
      row.engine = e.engine;
      row.document = d;
      row.contract = e.contract;
      row.peak = row.contract.most_held(n);
      const auto sets = row.contract.sets_of(units);
      for (const auto& g : row.contract.budget_groups_of(units, sets)) widest = std::max(widest, g.size());
      rows.push_back(std::move(row));
    }
  // The sets of the widest budget group and, on each thread, a unit's rewards and the solver's.
  const std::uint64_t n2 = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n);
  require_memory(n2 * 8 * (widest + 2 * static_cast<std::uint64_t>(worker_count(req.threads, static_cast<int>(U)))),
                 "oracle contract (the n x n rewards of a budget group's kept sets, a unit's and the solver's)");
  const auto rewards = [&](size_t u) {
    return decoding_unit(tr, static_cast<int>(u) / H, static_cast<int>(u) % H, 1, 0).w;
  };
  std::map<int, std::pair<double, double>> per_head;  // by k: OPT_dyn summed over units, and its bound
  std::map<int, double> total;
  std::vector<int> ks;
  for (const ContractRow& r : rows)
    if (std::find(ks.begin(), ks.end(), r.contract.budget) == ks.end()) ks.push_back(r.contract.budget);
  // The policies' schedules under every row's contract, in one lockstep pass over the trace
  // (policy-blind under admission only: the first tokens are admitted).
  const auto row_policies = [&](const ContractRow& row) {
    return row.contract.admission_only ? std::vector<PolicyId>{PolicyId::H2O} : req.policies;
  };
  std::vector<ReplayOptions> replays;
  for (const ContractRow& row : rows)
    for (PolicyId id : row_policies(row)) {
      ReplayOptions o;
      o.run.policy.id = id;
      o.run.gqa = GqaMode::KvMean;
      o.contract = row.contract;
      o.record_sets = false;
      replays.push_back(std::move(o));
    }
  Progress bar("contract", static_cast<long>(rows.size() + ks.size()) * static_cast<long>(U) + n);
  const UnitEndSteps all_ends = replay_end_steps(tr, replays, req.threads, [&](int) { bar.tick(); });
  size_t next_replay = 0;
  for (ContractRow& row : rows) {
    const int k = row.contract.budget;
    if (!per_head.count(k)) {  // the per-head reference, once per budget, on every unit in parallel
      std::vector<double> value(U), upper(U), mass(U);
      parallel_for(static_cast<int>(U), req.threads, [&](int u) {
        OfflineProblem p;
        p.w = rewards(static_cast<size_t>(u));
        p.budget = k;
        const OfflineSolution alone = solve_offline(p);
        value[static_cast<size_t>(u)] = alone.value;
        upper[static_cast<size_t>(u)] = alone.upper;
        for (int i = 0; i < n; ++i) mass[static_cast<size_t>(u)] += p.w.row(i).head(i + 1).sum();
        bar.tick();
      });
      per_head[k] = {std::accumulate(value.begin(), value.end(), 0.0),
                     std::accumulate(upper.begin(), upper.end(), 0.0)};
      total[k] = std::accumulate(mass.begin(), mass.end(), 0.0);
    }
    row.per_head = per_head[k].first;
    row.per_head_upper = per_head[k].second;
    row.total = total[k];
    const std::vector<PolicyId> ids = row_policies(row);
    const auto ends = all_ends.begin() + static_cast<long>(next_replay);
    next_replay += ids.size();
    std::vector<std::vector<double>> values(ids.size(), std::vector<double>(U, 0.0));
    const ContractOptimum opt = solve_contract(
        [&](size_t u) {
          Eigen::MatrixXd w = rewards(u);
          for (size_t x = 0; x < ids.size(); ++x) values[x][u] = contract_schedule_value(w, ends[x][u], row.contract);
          bar.tick();
          return w;
        },
        n, L, H, row.contract, req.threads);
    row.optimum = opt.value;
    row.upper = opt.upper;
    row.certified = opt.certified();
    row.price = row.per_head > 0 ? row.optimum / row.per_head : 1.0;
    for (size_t x = 0; x < ids.size(); ++x) {
      const double v = std::accumulate(values[x].begin(), values[x].end(), 0.0);
      if (row.contract.admission_only)
        row.first_come = v;
      else
        row.policies.push_back({policy_name(ids[x]), v, row.optimum > 0 ? v / row.optimum : 1.0});
    }
  }
  bar.finish();
  out.rows = std::move(rows);
  return out;
}

nlohmann::json ContractResult::to_json() const {
  nlohmann::json rows_json = nlohmann::json::array();
  for (const ContractRow& r : rows) {
    nlohmann::json policies_json = nlohmann::json::array();
    for (const ContractPolicyValue& p : r.policies)
      policies_json.push_back({{"policy", p.policy}, {"value", p.value}, {"share", p.share}});
    nlohmann::json j = {{"engine", r.engine},
                        {"document", r.document},
                        {"budget", r.contract.budget},
                        {"contract", eviction_contract_schema().to_json(r.contract)},
                        {"peak", r.peak},
                        {"optimum", r.optimum},
                        {"upper", r.upper},
                        {"certified", r.certified},
                        {"per_head", r.per_head},
                        {"per_head_upper", r.per_head_upper},
                        {"total", r.total},
                        {"price", r.price},
                        {"policies", policies_json}};
    if (r.first_come >= 0) j["first_come"] = r.first_come;
    rows_json.push_back(j);
  }
  return {{"trace", trace},   {"documents", documents}, {"n", n},
          {"layers", layers}, {"kv_heads", kv_heads},   {"rows", rows_json}};
}

Report ContractResult::report() const {
  Report rep;
  rep.line("the exact optimum under each engine's contract on " + trace + " (n = " + std::to_string(n) + ", " +
           std::to_string(layers) + " layers x " + std::to_string(kv_heads) + " KV heads):");
  for (size_t d = 0; d < documents.size(); ++d)
    for (const ContractRow& r : rows)
      if (r.document == d) {
        rep.line("  " + std::to_string(d + 1) + ". " + r.engine + ": " + describe(r.contract));
        break;
      }
  std::vector<std::string> policies;  // every policy named in a row, in order
  for (const ContractRow& r : rows)
    for (const ContractPolicyValue& p : r.policies)
      if (std::find(policies.begin(), policies.end(), p.policy) == policies.end()) policies.push_back(p.policy);
  std::vector<std::string> head = {"contract", "k",        "peak", "optimum / all", "per-head OPT_dyn / all",
                                   "price",    "certified"};
  for (const std::string& p : policies) head.push_back(p + " / optimum");
  const bool admission =
      std::any_of(rows.begin(), rows.end(), [](const ContractRow& r) { return r.contract.admission_only; });
  if (admission) head.push_back("first come / optimum");
  Table& t = rep.table(head);
  LinePlot plot;
  plot.title = "the optimum under each contract over the per-head optimum at the same k";
  plot.x_label = "k / n";
  plot.y_label = "price (share of the per-head OPT_dyn)";
  plot.lines.push_back({"per-head OPT_dyn", 1.0});
  double lo = 1.0, hi = 1.0;
  for (const ContractRow& r : rows) {
    std::vector<Cell> cells = {std::to_string(r.document + 1) + ". " + r.engine,
                               integer(r.contract.budget),
                               integer(r.peak),
                               decimal(r.optimum / r.total),
                               decimal(r.per_head / r.total),
                               decimal(r.price),
                               r.certified ? Cell("yes") : Cell("NO [FAILS: bug in kvoracle]")};
    for (const std::string& name : policies) {
      const auto it = std::find_if(r.policies.begin(), r.policies.end(),
                                   [&](const ContractPolicyValue& p) { return p.policy == name; });
      cells.push_back(it == r.policies.end() ? Cell("-") : decimal(it->share));
    }
    if (admission) cells.push_back(r.first_come >= 0 ? decimal(r.first_come / r.optimum) : Cell("-"));
    t.row(cells);
    plot.add_point(std::to_string(r.document + 1) + ". " + r.engine, static_cast<double>(r.contract.budget) / n,
                   r.price);
    lo = std::min(lo, r.price);
    hi = std::max(hi, r.price);
  }
  rep.line(
      "price: the contract's optimum over the per-head OPT_dyn at the same k (every (layer, KV head) its own "
      "set, evicting at every step, no window or sinks); peak: the most tokens a kept set holds between "
      "evictions; a policy's share: its value under the contract over the contract's optimum");
  plot.y_min = std::max(0.0, std::floor(lo * 10.0 - 0.5) / 10.0);
  plot.y_max = std::ceil(hi * 10.0 + 0.5) / 10.0;
  rep.plot("contract.svg", plot.svg());
  return rep;
}

}  // namespace kvo
