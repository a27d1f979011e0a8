// `oracle contract`: a work plan of one unit per (contract, budget) row and per budget's per-head
// optimum (shared with a row that is that optimum). A unit computes each (layer, KV head)'s rewards
// once and from them the optimum under its contract (solve_contract) and the row's policies'
// values; the policies obey the contracts in one lockstep replay (their schedules as end steps).
#include "kvo/oracle/contract_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>

#include "kvo/core/error.hpp"
#include "kvo/core/memory_limit.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/replay_lockstep.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/core/text_file.hpp"
#include "kvo/core/unit_bytes.hpp"
#include "kvo/core/work_plan.hpp"
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

namespace {

// Whether a contract is the per-head reference itself: every unit its own set and budget, evicting
// at every step, nothing protected (its optimum is OPT_dyn at its k; the prompt's length matters
// only to compressions).
bool is_per_head(const EvictionContract& c) {
  return c.kept_sets == KeptSets::Head && c.budget_scope == BudgetScope::Head && c.recent == 0 && c.sinks == 0 &&
         c.page_size == 1 && !c.compresses() && c.delay == 0 && !c.admission_only;
}

// One unit of work: the optimum under one contract (a row's, or the per-head reference of a budget
// no row is), with the values of the row's policies under it and, for the reference, the mass of
// keeping every token.
struct ContractJob {
  EvictionContract contract;
  int row = -1;            // the row it answers, or -1
  bool reference = false;  // whether it is its budget's per-head reference
  size_t replay = 0;       // the row's first replay in the lockstep pass
  size_t policies = 0;     // how many replays the row has
};

// `oracle contract` as a work plan: one unit per job, largest first; the policies' schedules come
// from one lockstep pass over the trace, run by the first unit of this process that needs them (a
// unit stored in a checkpoint needs none).
class ContractPlan final : public WorkPlan<std::vector<nlohmann::json>> {
 public:
  ContractPlan(const Trace& tr, std::vector<ContractJob> jobs, std::vector<ReplayOptions> replays, int threads,
               bool progress)
      : tr_(tr), jobs_(std::move(jobs)), replays_(std::move(replays)), threads_(threads), progress_(progress) {
    inner_threads_ = std::max(1, worker_count(threads, 1 << 20) / std::max(1, static_cast<int>(jobs_.size())));
    // A unit's cost: every unit's rewards, and one solve per kept set.
    const std::vector<ContractUnit> units = model_units(tr_.n_layers, tr_.n_kv_heads);
    for (const ContractJob& j : jobs_)
      costs_.push_back(0.2 * static_cast<double>(units.size()) + static_cast<double>(j.contract.sets_of(units).size()));
  }
  int size() const override { return static_cast<int>(jobs_.size()); }
  std::string name(int unit) const override {
    const ContractJob& j = jobs_[static_cast<size_t>(unit)];
    return (j.row >= 0 ? "contract row " + std::to_string(j.row + 1) : std::string("the per-head optimum")) +
           " at k = " + std::to_string(j.contract.budget);
  }
  double cost(int unit) const override { return costs_[static_cast<size_t>(unit)]; }
  std::string run_bytes(int unit) const override;
  std::vector<nlohmann::json> assemble_bytes(const std::vector<std::string>& units) const override {
    std::vector<nlohmann::json> out;
    for (size_t u = 0; u < units.size(); ++u) {
      nlohmann::json j = from_unit_bytes(units[u], name(static_cast<int>(u)));
      // A checkpoint's unit answers the same contract (its documents are files that may have changed).
      require(j.value("contract", nlohmann::json()) == eviction_contract_schema().to_json(jobs_[u].contract),
              "checkpoint: " + name(static_cast<int>(u)) +
                  " was computed under another contract (a contract file changed): give a new checkpoint folder");
      out.push_back(std::move(j));
    }
    return out;
  }

 private:
  const UnitEndSteps& replays() const {
    std::call_once(replayed_, [&] {
      Progress bar("contract replays", tr_.n_tokens, progress_);
      ends_ = replay_end_steps(tr_, replays_, threads_, [&](int) { bar.tick(); });
      bar.finish();
    });
    return ends_;
  }
  const Trace& tr_;
  std::vector<ContractJob> jobs_;
  std::vector<ReplayOptions> replays_;
  std::vector<double> costs_;
  int threads_, inner_threads_ = 1;
  bool progress_;
  mutable std::once_flag replayed_;
  mutable UnitEndSteps ends_;
};

std::string ContractPlan::run_bytes(int unit) const {
  const ContractJob& job = jobs_[static_cast<size_t>(unit)];
  const int n = tr_.n_tokens, L = tr_.n_layers, H = tr_.n_kv_heads;
  const size_t U = static_cast<size_t>(L) * static_cast<size_t>(H);
  const UnitEndSteps* ends = job.policies > 0 ? &replays() : nullptr;
  std::vector<std::vector<double>> values(job.policies, std::vector<double>(U, 0.0));
  std::vector<double> mass(U, 0.0);
  const ContractOptimum opt = solve_contract(
      [&](size_t u) {
        Eigen::MatrixXd w = decoding_unit(tr_, static_cast<int>(u) / H, static_cast<int>(u) % H, 1, 0).w;
        for (size_t x = 0; x < job.policies; ++x)
          values[x][u] = contract_schedule_value(w, (*ends)[job.replay + x][u], job.contract);
        if (job.reference)
          for (int i = 0; i < n; ++i) mass[u] += w.row(i).head(i + 1).sum();
        return w;
      },
      n, L, H, job.contract, inner_threads_);
  nlohmann::json out = {{"contract", eviction_contract_schema().to_json(job.contract)},
                        {"optimum", opt.value},
                        {"upper", opt.upper},
                        {"certified", opt.certified()}};
  nlohmann::json policy_values = nlohmann::json::array();
  for (const std::vector<double>& v : values) policy_values.push_back(std::accumulate(v.begin(), v.end(), 0.0));
  out["policies"] = policy_values;
  if (job.reference) out["total"] = std::accumulate(mass.begin(), mass.end(), 0.0);
  return to_unit_bytes(out);
}

}  // namespace

ContractResult run_contract(const Trace& tr, const ContractRequest& req, const std::string& name) {
  return *run_contract(tr, req, WorkTeam(req.threads, true), name);
}

std::optional<ContractResult> run_contract(const Trace& tr, const ContractRequest& req, const WorkTeam& team,
                                           const std::string& name) {
  req.validate();
  const int n = tr.n_tokens, L = tr.n_layers, H = tr.n_kv_heads;
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
  const std::vector<ContractUnit> units = model_units(L, H);
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
  // On each thread: the sets of a budget group, a unit's rewards and the solver's.
  const std::uint64_t n2 = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n);
  require_memory(n2 * 8 * (widest + 2) * static_cast<std::uint64_t>(worker_count(team.threads(), 1 << 20)),
                 "oracle contract (the n x n rewards of a budget group's kept sets, a unit's and the solver's)");
  // The jobs: each row, and each budget's per-head reference unless a row is that reference. The
  // policies' schedules under every row's contract come from one lockstep pass (policy-blind under
  // admission only: the first tokens are admitted).
  const auto row_policies = [&](const ContractRow& row) {
    return row.contract.admission_only ? std::vector<PolicyId>{PolicyId::H2O} : req.policies;
  };
  std::vector<ContractJob> jobs;
  std::vector<ReplayOptions> replays;
  std::map<int, size_t> reference;  // by k: the job that is the per-head optimum
  for (size_t r = 0; r < rows.size(); ++r) {
    ContractJob job{rows[r].contract, static_cast<int>(r), false, replays.size(), 0};
    for (PolicyId id : row_policies(rows[r])) {
      ReplayOptions o;
      o.run.policy.id = id;
      o.run.gqa = GqaMode::KvMean;
      o.contract = rows[r].contract;
      o.record_sets = false;
      replays.push_back(std::move(o));
      ++job.policies;
    }
    if (is_per_head(job.contract) && !reference.count(job.contract.budget)) {
      job.reference = true;
      reference[job.contract.budget] = jobs.size();
    }
    jobs.push_back(job);
  }
  for (const ContractRow& row : rows)
    if (!reference.count(row.contract.budget)) {
      EvictionContract plain;
      plain.budget = row.contract.budget;
      reference[plain.budget] = jobs.size();
      jobs.push_back({plain, -1, true, 0, 0});
    }
  const ContractPlan plan(tr, jobs, std::move(replays), team.threads(), team.progress());
  const std::optional<std::vector<nlohmann::json>> done = team.run(plan, "contract", "oracle contract");
  if (!done) return std::nullopt;
  for (size_t r = 0; r < rows.size(); ++r) {
    ContractRow& row = rows[r];
    const nlohmann::json& own = (*done)[r];  // the rows' jobs come first, in order
    const nlohmann::json& ref = (*done)[reference.at(row.contract.budget)];
    row.per_head = json_number(ref.at("optimum"));
    row.per_head_upper = json_number(ref.at("upper"));
    row.total = json_number(ref.at("total"));
    row.optimum = json_number(own.at("optimum"));
    row.upper = json_number(own.at("upper"));
    row.certified = own.at("certified").get<bool>();
    row.price = row.per_head > 0 ? row.optimum / row.per_head : 1.0;
    const std::vector<PolicyId> ids = row_policies(row);
    for (size_t x = 0; x < ids.size(); ++x) {
      const double v = json_number(own.at("policies").at(x));
      if (row.contract.admission_only)
        row.first_come = v;
      else
        row.policies.push_back({policy_name(ids[x]), v, row.optimum > 0 ? v / row.optimum : 1.0});
    }
  }
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
