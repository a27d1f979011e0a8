#include "kvo/oracle/competitive.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/memory_limit.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/unit_bytes.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_streaming.hpp"

namespace kvo {

ScheduleRun compact_run(ScheduleRun run) {
  const int n = static_cast<int>(run.kept.size());
  if (!run.end.empty() || n == 0) return run;
  std::vector<int> end(static_cast<size_t>(n)), count(static_cast<size_t>(n), 0);
  for (int j = 0; j < n; ++j) end[static_cast<size_t>(j)] = j - 1;
  for (int i = 0; i < n; ++i)
    for (int j : run.kept[static_cast<size_t>(i)]) {
      if (j < 0 || j > i) return run;
      end[static_cast<size_t>(j)] = i;
      ++count[static_cast<size_t>(j)];
    }
  for (int j = 0; j < n; ++j)
    if (count[static_cast<size_t>(j)] != end[static_cast<size_t>(j)] - j + 1) return run;  // not one interval from j
  run.kept.clear();
  run.kept.shrink_to_fit();
  run.end = std::move(end);
  return run;
}

std::string outside_problem(const ScheduleRun& run, int n, int k, int r) {
  if (!run.nested) return "re-enters evicted tokens";
  const bool by_end = run.kept.empty();
  std::vector<int> change(static_cast<size_t>(n) + 1, 0);  // cache sizes of an end-time schedule
  if (by_end)
    for (int j = 0; j < n; ++j)
      if (run.end[static_cast<size_t>(j)] >= j) {
        ++change[static_cast<size_t>(j)];
        --change[static_cast<size_t>(run.end[static_cast<size_t>(j)]) + 1];
      }
  int size = 0;
  for (int i = 0; i < n; ++i) {
    const auto* s = by_end ? nullptr : &run.kept[static_cast<size_t>(i)];
    size = by_end ? size + change[static_cast<size_t>(i)] : static_cast<int>(s->size());
    if (size > k) return "holds " + std::to_string(size) + " > k tokens at step " + std::to_string(i);
    for (int j = std::max(0, i - r + 1); j <= i; ++j) {
      const bool held = by_end ? run.end[static_cast<size_t>(j)] >= i : std::binary_search(s->begin(), s->end(), j);
      if (!held) return "drops token " + std::to_string(j) + " of the forced window at step " + std::to_string(i);
    }
  }
  return "";
}

OfflineOrdering order_against_optimum(const WeightRows& w, int budget, int recent, const OfflineSolution& opt,
                                      const std::vector<ScheduleRun>& runs) {
  const int n = w.n();
  OfflineOrdering o;
  std::optional<ScheduleEvaluator> certificate;
  std::string invalid;
  try {
    certificate.emplace(n, budget, recent, opt.end, opt.price);
  } catch (const Error& e) {
    invalid = e.what();
  }
  std::vector<double> values(runs.size(), 0.0), copy;
  for (const ScheduleRun& r : runs)
    require(static_cast<int>(r.kept.empty() ? r.end.size() : r.kept.size()) == n,
            "offline ordering: policy " + r.policy + " has a schedule of the wrong length");
  // One pass: the static optimum of each row, each schedule's retained weight, the certificate.
  for_each_row(w, 0, n, false, 1, [&](int i, std::span<const double> row) {
    copy.assign(row.begin(), row.end());
    o.static_sum += top_k_sum(copy, budget);
    for (size_t q = 0; q < runs.size(); ++q) {
      const ScheduleRun& r = runs[q];
      double& v = values[q];
      if (r.kept.empty()) {
        for (int j = 0; j <= i; ++j)
          if (r.end[static_cast<size_t>(j)] >= i) v += row[static_cast<size_t>(j)];
      } else {
        for (int j : r.kept[static_cast<size_t>(i)]) v += row[static_cast<size_t>(j)];
      }
    }
    if (certificate) certificate->add(i, row);
  });
  const double tol = 1e-9 * std::max(1.0, o.static_sum);
  // A solution left unevaluated (StreamingOfflineOptions::evaluate) takes its value from this pass.
  o.opt = std::isnan(opt.value) && certificate ? certificate->value() : opt.value;
  if (certificate) {
    o.certificate = certificate->upper();
    if (std::fabs(o.certificate - o.opt) > tol)
      o.violations.push_back("certificate gap " + std::to_string(o.certificate - o.opt));
  } else {
    o.certificate = NAN;
    o.violations.push_back("invalid certificate: " + invalid);
  }
  if (o.opt > o.static_sum + tol) o.violations.push_back("OPT_dyn > sum opt_i");
  for (size_t q = 0; q < runs.size(); ++q) {
    const ScheduleRun& r = runs[q];
    PolicyRatio pr{r.policy, r.nested, values[q], 0.0, outside_problem(r, n, budget, recent)};
    pr.ratio = o.opt > 0 ? pr.value / o.opt : 1.0;
    if (pr.outside.empty() && pr.value > o.opt + tol)
      o.violations.push_back(r.policy + " beats OPT_dyn by " + std::to_string(pr.value - o.opt));
    o.policies.push_back(std::move(pr));
  }
  return o;
}

OfflineOrdering order_against_optimum(const OfflineProblem& p, const OfflineSolution& opt,
                                      const std::vector<ScheduleRun>& runs) {
  return order_against_optimum(DenseWeightRows(p.w), p.budget, p.recent, opt, runs);
}

CompetitivePlan::CompetitivePlan(const Trace& trace, CompetitiveOptions o) : trace_(trace), o_(std::move(o)) {
  require(!o_.policies.empty(), "competitive ratios need at least one policy");
  for (ReplayOptions ro : o_.policies) {
    ro.record_sets = true;
    ro.threads = 1;
    plans_.emplace_back(trace, std::move(ro));
  }
  // A unit holds one policy's replay records at a time (each step's attended and kept sets, about
  // 2 (k + 1) ints and 4 vector headers per step and head) beside O(n) per head for the rest, and
  // the solver's float cost table of one head at a time (at most 2 n^2 bytes; docs/oracle.md §3d).
  const int n = trace.n_tokens;
  int k = 0;
  for (int layer = 0; layer < trace.n_layers; ++layer)
    for (int head = 0; head < trace.n_heads; ++head)
      k = std::max(k, o_.policies.front().run.unit_budget(n, layer, head).total);
  const std::uint64_t per_head = static_cast<std::uint64_t>(n) * (2 * (static_cast<std::uint64_t>(k) + 1) * 4 + 160);
  const std::uint64_t heads = static_cast<std::uint64_t>(trace.group_size());
  const std::uint64_t table = 2 * static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n);
  require_memory((per_head * heads + table) * static_cast<std::uint64_t>(worker_count(o_.threads, size())),
                 "the offline oracle (each running unit's replay records and cost table)");
}

int CompetitivePlan::size() const { return plans_.front().size(); }

std::string CompetitivePlan::name(int unit) const { return plans_.front().name(unit); }

std::vector<HeadCompetitive> CompetitivePlan::run(int unit) const {
  // Each policy is replayed on the unit in turn and kept only as its compact schedules, so a unit
  // holds one replay's records at a time; the optimum and the ordering then read rows of attention
  // recomputed from q and k (no n x n matrix).
  std::vector<HeadCompetitive> out;
  std::vector<std::vector<ScheduleRun>> runs;  // per head of the unit, per policy
  for (size_t q = 0; q < plans_.size(); ++q) {
    std::vector<HeadReplay> heads = plans_[q].run(unit);
    if (q == 0) {
      out.resize(heads.size());
      runs.resize(heads.size());
      for (size_t x = 0; x < heads.size(); ++x) {
        out[x].layer = heads[x].layer;
        out[x].head = heads[x].head;
        out[x].k = heads[x].budget.total;
      }
    }
    const auto probe = make_policy(plans_[q].options().run.policy);
    for (size_t x = 0; x < heads.size(); ++x) {
      std::vector<std::vector<int>> kept;  // moved out of the replay's records, which go next
      for (StepRecord& s : heads[x].steps) kept.push_back(std::move(s.kept));
      heads[x].steps = {};
      runs[x].push_back(compact_run({probe->name(), probe->nested(), std::move(kept), {}}));
    }
  }
  for (size_t x = 0; x < out.size(); ++x) {
    HeadCompetitive& hc = out[x];
    const AttentionWeightRows rows(HeadView(trace_, hc.layer, hc.head));
    const int recent = std::min(o_.forced_window, hc.k);
    StreamingOfflineOptions so;
    so.evaluate = false;  // the ordering's pass evaluates the schedule with its certificate
    OfflineOrdering ord =
        order_against_optimum(rows, hc.k, recent, solve_offline_streaming(rows, hc.k, recent, so), runs[x]);
    hc.opt_dyn = ord.opt;
    hc.dual_bound = ord.certificate;
    hc.static_sum = ord.static_sum;
    hc.policies = std::move(ord.policies);
    hc.violations = std::move(ord.violations);
  }
  return out;
}

std::vector<HeadCompetitive> CompetitivePlan::assemble(std::vector<std::vector<HeadCompetitive>> units) const {
  require(static_cast<int>(units.size()) == size(), "internal: the offline oracle needs one result per unit");
  std::vector<HeadCompetitive> out;
  for (auto& v : units)
    for (auto& h : v) out.push_back(std::move(h));
  std::stable_sort(out.begin(), out.end(), [](const HeadCompetitive& a, const HeadCompetitive& b) {
    return std::tie(a.layer, a.head) < std::tie(b.layer, b.head);
  });
  return out;
}

std::string CompetitivePlan::run_bytes(int unit) const { return encode_competitive(run(unit)); }

std::vector<HeadCompetitive> CompetitivePlan::assemble_bytes(const std::vector<std::string>& units) const {
  std::vector<std::vector<HeadCompetitive>> decoded;
  decoded.reserve(units.size());
  for (const auto& b : units) decoded.push_back(decode_competitive(b));
  return assemble(std::move(decoded));
}

std::vector<HeadCompetitive> competitive_ratios(const Trace& trace, const CompetitiveOptions& o) {
  const CompetitivePlan plan(trace, o);
  std::vector<std::vector<HeadCompetitive>> units(static_cast<size_t>(plan.size()));
  parallel_for(plan.size(), o.threads, [&](int u) {
    units[static_cast<size_t>(u)] = plan.run(u);
    if (o.on_head_done) o.on_head_done();
  });
  return plan.assemble(std::move(units));
}

std::string encode_competitive(const std::vector<HeadCompetitive>& heads) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& h : heads) {
    nlohmann::json ps = nlohmann::json::array();
    for (const auto& p : h.policies)
      ps.push_back(
          {{"policy", p.policy}, {"nested", p.nested}, {"value", p.value}, {"ratio", p.ratio}, {"outside", p.outside}});
    a.push_back({{"layer", h.layer},
                 {"head", h.head},
                 {"k", h.k},
                 {"opt_dyn", h.opt_dyn},
                 {"dual_bound", h.dual_bound},
                 {"static_sum", h.static_sum},
                 {"policies", ps},
                 {"violations", h.violations}});
  }
  return to_unit_bytes(a);
}

std::vector<HeadCompetitive> decode_competitive(const std::string& bytes) {
  std::vector<HeadCompetitive> out;
  try {
    for (const auto& j : from_unit_bytes(bytes, "an offline-oracle result")) {
      HeadCompetitive h;
      h.layer = j.at("layer").get<int>();
      h.head = j.at("head").get<int>();
      h.k = j.at("k").get<int>();
      h.opt_dyn = json_number(j.at("opt_dyn"));
      h.dual_bound = json_number(j.at("dual_bound"));
      h.static_sum = json_number(j.at("static_sum"));
      for (const auto& p : j.at("policies"))
        h.policies.push_back({p.at("policy").get<std::string>(), p.at("nested").get<bool>(), json_number(p.at("value")),
                              json_number(p.at("ratio")), p.at("outside").get<std::string>()});
      j.at("violations").get_to(h.violations);
      out.push_back(std::move(h));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("an offline-oracle result is not readable: ") + e.what());
  }
  return out;
}

}  // namespace kvo
