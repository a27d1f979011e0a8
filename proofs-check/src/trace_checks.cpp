#include "kvo/proofs_check/trace_checks.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "adakv_layer.hpp"
#include "head_data.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/memory_limit.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/unit_bytes.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/proofs_check/counterexamples.hpp"
#include "kvo/proofs_check/softmax_loss.hpp"

namespace kvo {
namespace {

const char* kLossChecks[] = {"C23", "C24", "C25", "C26", "D9"};

bool any_loss_check(const TraceChecksOptions& o) {
  for (const char* id : kLossChecks)
    if (check_enabled(o, id)) return true;
  return false;
}

std::vector<std::pair<int, int>> chosen_heads(const Trace& t, const TraceChecksOptions& o) {
  const std::vector<int> heads = o.run.chosen_heads(t.n_heads);
  std::vector<std::pair<int, int>> out;
  for (int l : o.run.chosen_layers(t.n_layers))
    for (int h : heads) out.emplace_back(l, h);
  return out;
}

// The per-head pass runs when H2O's claims or another paper's per-head claim do.
bool any_head_check(const TraceChecksOptions& o) {
  if (paper_enabled(o, "h2o")) return true;
  for (const char* id : {"SNAP1", "SINK1", "SCIS1", "TOVA1"})
    if (check_enabled(o, id)) return true;
  return false;
}

bool any_layer_check(const TraceChecksOptions& o) {
  for (const char* id : {"ADA1", "ADA2", "ADA3"})
    if (check_enabled(o, id)) return true;
  return false;
}

std::vector<std::pair<int, int>> sweep_heads(const Trace& t, const TraceChecksOptions& o) {
  std::vector<std::pair<int, int>> out;
  // The retained-mass sweep is part of H2O's report.
  if (o.sweep.empty() || o.sweep_heads <= 0 || !paper_enabled(o, "h2o")) return out;
  for (const auto& [l, h] : chosen_heads(t, o))
    for (int x = 0; x < std::min(o.sweep_heads, t.n_heads); ++x)
      if (h == (l + x) % t.n_heads) out.emplace_back(l, h);
  return out;
}

std::vector<std::pair<std::string, Eigen::MatrixXd>> loss_matrices(const Trace& t, const TraceChecksOptions& o) {
  std::vector<std::pair<std::string, Eigen::MatrixXd>> out;
  if (t.head_dim == 0 || o.loss_heads <= 0) return out;
  std::vector<int> layers = {0, t.n_layers / 2, t.n_layers - 1};
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  layers.resize(std::min(layers.size(), static_cast<size_t>(o.loss_heads)));
  for (int l : layers) {
    if (t.k[static_cast<size_t>(l)].empty()) continue;
    const int rows = std::min(t.n_tokens, 256), d = t.head_dim;
    if (rows < d) continue;
    Eigen::MatrixXd A(rows, d);
    const float* k = t.k[static_cast<size_t>(l)].data();  // KV head 0
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < d; ++c) A(r, c) = k[static_cast<size_t>(r) * static_cast<size_t>(d) + static_cast<size_t>(c)];
    out.emplace_back("keys L" + std::to_string(l) + " KV0 n=" + std::to_string(rows), std::move(A));
  }
  return out;
}

// What the per-head passes hold at once: per head O(n (d + k)) (the policies' states and records,
// the per-step series, the rows near sampled steps, the values of C18) plus the offline problem on
// its m steps (column generation's float cost table of about m^2 / 2 entries, its candidate lists
// and every run's caches there), and the n x n attention only for policies that need it; times
// the heads in flight.
std::uint64_t head_pass_bytes(const Trace& t, const TraceChecksOptions& o,
                              const std::vector<std::pair<int, int>>& heads) {
  const std::uint64_t n = static_cast<std::uint64_t>(t.n_tokens), d = static_cast<std::uint64_t>(t.head_dim);
  const std::uint64_t R = o.policies.size(),
                      m = o.offline_tokens > 0
                              ? std::min<std::uint64_t>(n, static_cast<std::uint64_t>(o.offline_tokens))
                              : n;
  std::uint64_t k = 1;
  for (const auto& [l, h] : heads)
    k = std::max<std::uint64_t>(k, static_cast<std::uint64_t>(o.run.budget.resolve(t.n_tokens, l, h).total));
  std::uint64_t b = 8 * n * (8 + 8 * R) + 4 * R * 6 * k + 16 * 8 * n + 8 * n * d;
  if (check_enabled(o, "C19") || check_enabled(o, "D10")) b += m * m * 2 + 200 * m + 4 * R * m * std::min(k, m);
  for (PolicyId id : o.policies)
    if (needs_dense(o.run.with_policy(id).policy)) {
      b += 8 * n * n;
      break;
    }
  return b * static_cast<std::uint64_t>(worker_count(o.threads, static_cast<int>(heads.size())));
}

struct LossJob {
  std::string name;
  Eigen::MatrixXd A;
  double R;
};

std::vector<LossJob> loss_jobs(const Trace& t, const TraceChecksOptions& o) {
  std::vector<LossJob> jobs;
  if (!any_loss_check(o)) return jobs;
  for (auto& [name, A] : loss_matrices(t, o)) jobs.push_back({name + " R=1", std::move(A), 1.0});
  for (int r = 0; r < o.loss_random; ++r) {
    const double R = 1.0 + 0.5 * (r % 3);
    const LossInstance in =
        random_loss_instance(24, 6, R, 1.0, 0.0, o.run.seed + 1000u + static_cast<std::uint64_t>(r));
    jobs.push_back({"random n=24 d=6 R=" + std::to_string(R).substr(0, 3), in.loss.A, R});
  }
  return jobs;
}

std::vector<CheckRecord> run_loss_job(const LossJob& j, int x, const TraceChecksOptions& o) {
  const std::uint64_t seed = o.run.seed + 77u * static_cast<std::uint64_t>(x + 1);
  const std::string variant = j.name.rfind("random", 0) == 0 ? "random" : "trace keys";
  std::vector<CheckRecord> out;
  auto add = [&](std::vector<CheckRecord> rs) {
    for (auto& r : rs) {
      r.detail["data"] = j.name;
      if (check_enabled(o, r.id)) out.push_back(std::move(r));
    }
  };
  const LossInstance plain = make_loss_instance(j.A, j.R, 1.0, 20.0, seed);
  if (check_enabled(o, "C23") || check_enabled(o, "D9")) add(check_loss_formulas(plain, variant));
  if (check_enabled(o, "C24")) add(check_hessian_pd(j.A, j.R, 1.0, seed, variant));
  if (check_enabled(o, "C25")) add(check_lipschitz(plain, 16, seed, variant));
  if (check_enabled(o, "C26") || check_enabled(o, "D9")) {
    const LossInstance strong = make_loss_instance(j.A, j.R, 1.0, 200.0 * std::exp(j.R * j.R), seed);
    add(check_newton(strong, 4, seed, variant));
  }
  return out;
}

nlohmann::json records_json(const std::vector<CheckRecord>& rs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : rs) a.push_back(record_to_json(r));
  return a;
}
std::vector<CheckRecord> records_from(const nlohmann::json& a) {
  std::vector<CheckRecord> rs;
  for (const auto& j : a) rs.push_back(record_from_json(j));
  return rs;
}

}  // namespace

void TraceChecksOptions::validate() const {
  require(ground >= 2 && ground <= 16, "ground must be in [2, 16]");
  require(small_k >= 1 && small_k < ground, "small_k must be in [1, ground)");
  require(samples >= 1 && sampled_steps >= 1, "samples and sampled_steps must be >= 1");
  require(sweep_heads >= 1, "sweep_heads must be >= 1");
  require(offline_tokens == 0 || offline_tokens >= 2, "offline_tokens must be 0 (every step) or >= 2");
  require(loss_heads >= 0, "loss_heads must be >= 0");
  require(loss_random >= 0, "loss_random must be >= 0");
  require(power_law_bootstrap >= 0, "power_law_bootstrap must be >= 0");
  require(cooccurrence_window >= 1, "cooccurrence_window must be >= 1");
  for (double b : sweep)
    require(b > 0 && b <= 1, "sweep budgets must be fractions of n in (0, 1], not " + std::to_string(b));
  const auto& catalogue = claim_catalogue();
  for (const auto& id : checks) {  // unknown ids fail before any work, naming the ids verify runs
    const auto c = std::find_if(catalogue.begin(), catalogue.end(), [&](const ClaimInfo& x) { return x.id == id; });
    if (c == catalogue.end()) throw Error("unknown check id '" + id + "' (verify runs " + trace_check_ids() + ")");
    if (c->closed_loop)
      throw Error("check " + id +
                  " is one of the paper's closed-loop experiments: kvoracle eval, tasks run or eval diversity judge it "
                  "on the real model (docs/checks.md#" +
                  c->doc().substr(c->doc().find('#') + 1) + ")");
    if (!claims.empty() && !claims.count(c->paper))
      throw Error("check " + id + " is " + paper_info(c->paper).name + "'s claim, which --claims leaves out (add " +
                  c->paper + ")");
  }
  for (const auto& p : claims) paper_info(p);
  require(!policies.empty(), "no policy to check");
}

bool paper_enabled(const TraceChecksOptions& o, const std::string& paper) {
  if (!o.claims.empty()) return o.claims.count(paper) > 0;
  if (o.checks.empty()) return paper == "h2o";
  for (const auto& id : o.checks)
    if (claim_info(id).paper == paper) return true;
  return false;
}

bool check_enabled(const TraceChecksOptions& o, const std::string& id) {
  return (o.checks.empty() || o.checks.count(id)) && paper_enabled(o, claim_info(id).paper);
}

struct TraceChecksPlan::Lists {
  std::vector<std::pair<int, int>> heads, sweep;
  std::vector<int> layers;  // the layers of Ada-KV's claims
  std::vector<LossJob> loss;
  // Sweep cells are numbered (sweep head) x (budget). A cell whose budget resolves to its head's own
  // budget comes from that head's unit (head_cell), which solves the same offline problem for C19;
  // the others are units of their own (sweep_units).
  std::vector<int> sweep_units, head_cell;
};

namespace {

nlohmann::json cell_json(const detail::SweepCell& c) {
  return {{"policy", c.policy}, {"stat", c.stat}, {"dyn", c.dyn}};
}

detail::SweepCell cell_from(const nlohmann::json& j) {
  detail::SweepCell c;
  j.at("policy").get_to(c.policy);
  c.stat = json_number(j.at("stat"));
  c.dyn = json_number(j.at("dyn"));
  return c;
}

TraceChecksOptions sweep_options(const TraceChecksOptions& o, double budget) {
  TraceChecksOptions so = o;
  so.run.budget = o.run.budget.with_total(Amount{true, budget});
  return so;
}

bool same_budget(const TraceChecksOptions& a, const TraceChecksOptions& b, int n, int layer, int head) {
  const ResolvedBudget x = a.run.unit_budget(n, layer, head), y = b.run.unit_budget(n, layer, head);
  return x.total == y.total && x.heavy == y.heavy && x.recent == y.recent;
}

}  // namespace

TraceChecksPlan::TraceChecksPlan(const Trace& trace, TraceChecksOptions o) : trace_(trace), o_(std::move(o)) {
  o_.validate();
  require(o_.run.gqa == GqaMode::PerQueryHead, "the checks keep one cache per query head: gqa must be query");
  for (PolicyId id : o_.policies) {  // a bad budget, layer or parameter fails before any work
    const RunConfig run = o_.run.with_policy(id);
    run.validate(trace);
    make_policy(run.policy);
  }
  auto lists = std::make_shared<Lists>();
  if (any_head_check(o_)) lists->heads = chosen_heads(trace, o_);
  if (any_layer_check(o_)) lists->layers = o_.run.chosen_layers(trace.n_layers);
  lists->sweep = sweep_heads(trace, o_);
  lists->loss = loss_jobs(trace, o_);
  lists->head_cell.assign(lists->heads.size(), -1);
  const size_t budgets = o_.sweep.size();
  for (size_t c = 0; c < lists->sweep.size() * budgets; ++c) {
    const auto [l, h] = lists->sweep[c / budgets];
    const auto at = std::find(lists->heads.begin(), lists->heads.end(), std::make_pair(l, h));
    int& merged = lists->head_cell[static_cast<size_t>(at - lists->heads.begin())];  // sweep heads are checked heads
    if (merged < 0 && same_budget(o_, sweep_options(o_, o_.sweep[c % budgets]), trace.n_tokens, l, h))
      merged = static_cast<int>(c);
    else
      lists->sweep_units.push_back(static_cast<int>(c));
  }
  require_memory(head_pass_bytes(trace, o_, lists->heads),
                 "verify on n = " + std::to_string(trace.n_tokens) + " tokens (" + std::to_string(lists->heads.size()) +
                     " heads, " + std::to_string(o_.policies.size()) + " policies)");
  lists_ = std::move(lists);
}

int TraceChecksPlan::size() const {
  return static_cast<int>(lists_->heads.size() + lists_->sweep_units.size() + lists_->loss.size() +
                          lists_->layers.size());
}

TraceChecksPlan::Unit TraceChecksPlan::unit(int u) const {
  require(u >= 0 && u < size(), "internal: verify unit " + std::to_string(u) + " out of range");
  const int heads = static_cast<int>(lists_->heads.size());
  const int cells = static_cast<int>(lists_->sweep_units.size());
  if (u < heads) return {UnitKind::Head, u};
  const int losses = static_cast<int>(lists_->loss.size());
  if (u < heads + cells) return {UnitKind::Sweep, u - heads};
  if (u < heads + cells + losses) return {UnitKind::Loss, u - heads - cells};
  return {UnitKind::Layer, u - heads - cells - losses};
}

std::string TraceChecksPlan::name(int u) const {
  const Unit x = unit(u);
  switch (x.kind) {
    case UnitKind::Head: {
      const auto [l, h] = lists_->heads[static_cast<size_t>(x.index)];
      return "layer " + std::to_string(l) + " head " + std::to_string(h);
    }
    case UnitKind::Sweep: {
      const auto cell = static_cast<size_t>(lists_->sweep_units[static_cast<size_t>(x.index)]);
      const auto [l, h] = lists_->sweep[cell / o_.sweep.size()];
      return "sweep layer " + std::to_string(l) + " head " + std::to_string(h) + " budget " +
             std::to_string(o_.sweep[cell % o_.sweep.size()]);
    }
    case UnitKind::Loss:
      return "loss instance " + lists_->loss[static_cast<size_t>(x.index)].name;
    case UnitKind::Layer:
      return "Ada-KV layer " + std::to_string(lists_->layers[static_cast<size_t>(x.index)]);
  }
  return "?";
}

double TraceChecksPlan::cost(int u) const {
  // Relative: a head's checks replay every policy with every check; a sweep cell replays them
  // without checks and solves two optima; a loss instance is a small dense problem.
  switch (unit(u).kind) {
    case UnitKind::Head:
      return 1.0;
    case UnitKind::Sweep:
      return 0.3;
    case UnitKind::Loss:
      return 0.01;
    case UnitKind::Layer:  // 32 queries of every head of the layer
      return 0.1;
  }
  return 0.0;
}

std::string TraceChecksPlan::run(int u) const {
  const Unit x = unit(u);
  switch (x.kind) {
    case UnitKind::Head: {
      const auto [layer, head] = lists_->heads[static_cast<size_t>(x.index)];
      const bool cell = lists_->head_cell[static_cast<size_t>(x.index)] >= 0;
      const detail::HeadResult hr = detail::check_head(trace_, layer, head, o_, nullptr, cell);
      nlohmann::json out = {{"records", records_json(hr.records)},
                            {"rho", hr.extras.rho},
                            {"rho_min", hr.extras.rho_min},
                            {"gamma_proof", hr.extras.gamma_proof},
                            {"theta_b", hr.extras.theta_b}};
      if (cell) out["sweep"] = cell_json(*hr.sweep);
      return to_unit_bytes(out);
    }
    case UnitKind::Sweep: {
      const auto cell = static_cast<size_t>(lists_->sweep_units[static_cast<size_t>(x.index)]);
      const auto [layer, head] = lists_->sweep[cell / o_.sweep.size()];
      return to_unit_bytes(
          cell_json(detail::sweep_head(trace_, layer, head, sweep_options(o_, o_.sweep[cell % o_.sweep.size()]))));
    }
    case UnitKind::Loss:
      return to_unit_bytes(
          {{"records", records_json(run_loss_job(lists_->loss[static_cast<size_t>(x.index)], x.index, o_))}});
    case UnitKind::Layer:
      return to_unit_bytes(
          {{"records", records_json(detail::adakv_records(trace_, lists_->layers[static_cast<size_t>(x.index)], o_))}});
  }
  return {};
}

TraceChecksResult TraceChecksPlan::assemble(const std::vector<std::string>& results) const {
  require(static_cast<int>(results.size()) == size(), "internal: verify needs one result per unit");
  const auto& heads = lists_->heads;
  const auto& sw = lists_->sweep;
  const auto& o = o_;
  const Trace& trace = trace_;
  TraceChecksResult res;
  res.budget = o.run.budget.str();
  std::vector<detail::HeadExtras> extras(heads.size());
  std::vector<detail::SweepCell> cells(sw.size() * o.sweep.size());
  std::vector<CheckRecord> loss_records;
  for (int u = 0; u < size(); ++u) {
    const Unit x = unit(u);
    const nlohmann::json j = from_unit_bytes(results[static_cast<size_t>(u)], "the result of " + name(u));
    try {
      if (x.kind == UnitKind::Head) {
        res.report.append(records_from(j.at("records")));
        if (const int cell = lists_->head_cell[static_cast<size_t>(x.index)]; cell >= 0)
          cells[static_cast<size_t>(cell)] = cell_from(j.at("sweep"));
        detail::HeadExtras& e = extras[static_cast<size_t>(x.index)];
        for (const auto& [p, v] : j.at("rho").items()) {
          auto& dst = e.rho[p];
          for (const auto& val : v) dst.push_back(json_number(val));
        }
        j.at("rho_min").get_to(e.rho_min);
        e.gamma_proof = json_number(j.at("gamma_proof"));
        e.theta_b = json_number(j.at("theta_b"));
      } else if (x.kind == UnitKind::Sweep) {
        cells[static_cast<size_t>(lists_->sweep_units[static_cast<size_t>(x.index)])] = cell_from(j);
      } else {  // loss instances and layers: records only
        for (auto& r : records_from(j.at("records"))) loss_records.push_back(std::move(r));
      }
    } catch (const nlohmann::json::exception& e) {
      throw Error("the result of " + name(u) + " is malformed: " + e.what());
    }
  }

  // Constructed instances.
  if (check_enabled(o, "D6")) res.report.add(one_sided_eps_instance());
  if (check_enabled(o, "D7")) res.report.add(forced_token_instance());
  // Loss, gradient, Hessian (C23-C26, D9): key matrices of the trace and random instances.
  res.report.append(std::move(loss_records));
  res.report.sort();

  // Ratio series per policy (median over heads per step) and alpha_hat.
  for (const PolicyId id : o.policies) {
    const std::string p = policy_name(id);
    PolicySeries s;
    s.policy = p;
    std::vector<double> col;
    for (int i = 0; i < trace.n_tokens; ++i) {
      col.clear();
      for (const auto& e : extras) {
        auto it = e.rho.find(p);
        if (it != e.rho.end() && std::isfinite(it->second[static_cast<size_t>(i)]))
          col.push_back(it->second[static_cast<size_t>(i)]);
      }
      if (col.empty()) {
        s.rho_median.push_back(NAN);
        continue;
      }
      std::nth_element(col.begin(), col.begin() + static_cast<long>(col.size() / 2), col.end());
      s.rho_median.push_back(col[col.size() / 2]);
    }
    for (const auto& e : extras) {
      auto it = e.rho_min.find(p);
      if (it != e.rho_min.end())
        s.alpha_hat = std::max(s.alpha_hat, std::max(0.0, 1.0 - it->second / (1.0 - 1.0 / std::numbers::e)));
    }
    res.series.push_back(std::move(s));
  }
  // Heat maps.
  HeadGrid gp{"gamma^proof (UDC2 in the lemma's direction), A[id], max over steps", {}};
  HeadGrid tb{"theta (UDC1), B[id] along h2o-paper, max over steps", {}};
  gp.value.assign(static_cast<size_t>(trace.n_layers), std::vector<double>(static_cast<size_t>(trace.n_heads), NAN));
  tb.value = gp.value;
  for (size_t x = 0; x < heads.size(); ++x) {
    gp.value[static_cast<size_t>(heads[x].first)][static_cast<size_t>(heads[x].second)] = extras[x].gamma_proof;
    tb.value[static_cast<size_t>(heads[x].first)][static_cast<size_t>(heads[x].second)] = extras[x].theta_b;
  }
  res.grids = {gp, tb};

  // Retained mass against budget, next to the static and offline optima.
  if (!sw.empty()) {
    for (size_t bi = 0; bi < o.sweep.size(); ++bi) {
      double stat = 0.0, dyn = 0.0;
      std::vector<double> pol(o.policies.size(), 0.0);
      for (size_t hi = 0; hi < sw.size(); ++hi) {
        const detail::SweepCell& c = cells[hi * o.sweep.size() + bi];
        stat += c.stat / static_cast<double>(sw.size());
        dyn += c.dyn / static_cast<double>(sw.size());
        for (size_t pi = 0; pi < pol.size(); ++pi) pol[pi] += c.policy[pi] / static_cast<double>(sw.size());
      }
      res.sweep.push_back({"static optimum", o.sweep[bi], stat});
      res.sweep.push_back({"OPT_dyn", o.sweep[bi], dyn});
      for (size_t pi = 0; pi < pol.size(); ++pi)
        res.sweep.push_back({policy_name(o.policies[pi]), o.sweep[bi], pol[pi]});
    }
  }
  return res;
}

long work_units(const Trace& trace, const TraceChecksOptions& o) { return TraceChecksPlan(trace, o).size(); }

TraceChecksResult run_trace_checks(const Trace& trace, const TraceChecksOptions& o) {
  const TraceChecksPlan plan(trace, o);
  std::vector<std::string> results(static_cast<size_t>(plan.size()));
  parallel_for(plan.size(), o.threads, [&](int u) {
    results[static_cast<size_t>(u)] = plan.run(u);
    if (o.on_tick) o.on_tick();
  });
  return plan.assemble(results);
}

}  // namespace kvo
