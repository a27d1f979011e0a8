#include "kvo/core/replay_run.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "kvo/core/request_json.hpp"

namespace kvo {

void ReplayRequest::validate() const { run.build(policy, nullptr, SharedBudgets::Allowed); }

const Schema<ReplayRequest>& ReplayRequest::schema() {
  using R = ReplayRequest;
  static const Schema<R> schema(
      "replay request",
      fields<R>(
          {{member(&R::policy, {.name = "policy", .help = "eviction policy (see `kvoracle policies`)", .alias = "-p"}),
            member(&R::record_sets, {.name = "record_sets",
                                     .help = "attended, kept and evicted sets per step (off: O(n d) memory "
                                             "per head)",
                                     .cli = false}),
            member(&R::record_probs, {.name = "record_probs",
                                      .help = "include the renormalised probabilities in --out",
                                      .flag = "--probs",
                                      .switch_text = "true"}),
            member(&R::threads, {.name = "threads", .help = "threads (<= 0: all cores)", .cli = false})},
           nested("run", &R::run, run_options_schema())}));
  return schema;
}

nlohmann::json ReplayRequest::to_json() const { return schema().to_json(*this); }
ReplayRequest ReplayRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

ReplayOptions ReplayRequest::options(const Trace& trace) const {
  ReplayOptions o;
  o.run = run.build(policy, &trace, SharedBudgets::Allowed);
  o.record_sets = record_sets;
  o.record_probs = record_probs;
  o.threads = threads;
  return o;
}

std::optional<ReplayResult> run_replay(const Trace& trace, const ReplayRequest& request, const WorkTeam& team) {
  std::unique_ptr<ReplayPlan> plan;
  team.together([&] { plan = std::make_unique<ReplayPlan>(trace, request.options(trace)); });
  return team.run(*plan, "t0", "replay " + policy_name(request.policy));
}

void write_step_records(std::ostream& out, const ReplayResult& r, bool probs) {
  for (const auto& h : r.heads)
    for (size_t i = 0; i < h.steps.size(); ++i) {
      const auto& s = h.steps[i];
      nlohmann::json j = {{"layer", h.layer},
                          {"head", h.head},
                          {"step", i},
                          {"attended", s.attended},
                          {"kept", s.kept},
                          {"evicted", s.evicted},
                          {"reentered", s.reentered},
                          {"retained_mass", s.retained_mass},
                          {"accumulated", s.accumulated}};
      if (probs) j["probs"] = s.probs;
      out << j.dump() << '\n';
    }
}

std::vector<ReplayLayerSummary> replay_layer_summary(const ReplayResult& r) {
  std::map<int, ReplayLayerSummary> per_layer;
  for (const auto& h : r.heads) {
    auto& x = per_layer[h.layer];
    x.layer = h.layer;
    ++x.heads;
    x.evictions += h.evictions;
    x.reentries += h.reentries;
    x.mean_retained_mass += h.mean_retained_mass;
    x.worst_retained_mass = std::min(x.worst_retained_mass, h.mean_retained_mass);
    x.k = h.budget.total;
  }
  std::vector<ReplayLayerSummary> out;
  for (auto& [layer, x] : per_layer) {
    x.mean_retained_mass /= x.heads;
    out.push_back(x);
  }
  return out;
}

Report replay_report(const ReplayResult& r, const ReplayOptions& o, const std::string& trace, int n_tokens) {
  Report out;
  out.line("policy " + r.policy + " on " + trace + " (n = " + std::to_string(n_tokens) + ", budget " +
           o.run.budget.str() +
           (r.budget_scope == BudgetScope::Head ? "" : " shared per " + budget_scope_name(r.budget_scope)) + ", gqa " +
           std::string(to_string(r.gqa)) + ", prompt " + std::to_string(o.run.prompt_len) + ")");
  Table& t = out.table({"layer", "heads", "k", "evictions", "re-entries", "mean retained mass", "worst head"});
  for (const ReplayLayerSummary& x : replay_layer_summary(r))
    t.row({integer(x.layer), integer(x.heads), integer(x.k), integer(x.evictions), integer(x.reentries),
           decimal(x.mean_retained_mass), decimal(x.worst_retained_mass)});
  return out;
}

}  // namespace kvo
