#include "kvo/oracle/offline_run.hpp"

#include <algorithm>
#include <memory>

#include "kvo/core/error.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/request_json.hpp"

namespace kvo {

void OfflineOracleRequest::validate() const {
  require(!policies.empty(), "policies: at least one policy");
  require(forced_window >= 0, "forced_window must be >= 0");
}

const Schema<OfflineOracleRequest>& OfflineOracleRequest::schema() {
  using R = OfflineOracleRequest;
  static const Schema<R> schema(
      "offline oracle request",
      fields<R>(
          {{member(&R::policies, {.name = "policies", .help = "policies measured against OPT_dyn (comma-separated)"}),
            member(&R::forced_window, {.name = "forced_window",
                                       .help = "the last r tokens forced into OPT_dyn's caches (0: the paper's "
                                               "problem)"})},
           nested("run", &R::run, run_options_schema())}));
  return schema;
}

nlohmann::json OfflineOracleRequest::to_json() const { return schema().to_json(*this); }
OfflineOracleRequest OfflineOracleRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

nlohmann::json OfflineOracleResult::to_json() const {
  nlohmann::json jh = nlohmann::json::array();
  for (const auto& h : heads) {
    nlohmann::json jp = nlohmann::json::object();
    for (const auto& pr : h.policies)
      jp[pr.policy] = {{"value", pr.value},
                       {"ratio", pr.ratio},
                       {"nested", pr.nested},
                       {"ordering_checked", pr.outside.empty()},
                       {"outside_problem", pr.outside}};
    jh.push_back({{"layer", h.layer},
                  {"head", h.head},
                  {"k", h.k},
                  {"opt_dyn", h.opt_dyn},
                  {"dual_bound", h.dual_bound},
                  {"static_sum", h.static_sum},
                  {"policies", jp},
                  {"violations", h.violations}});
  }
  return {{"trace", trace}, {"forced_window", forced_window}, {"heads", jh}};
}

nlohmann::json OfflineOracleResult::summary_json() const {
  const double nh = static_cast<double>(heads.size());
  nlohmann::json jp = nlohmann::json::array();
  for (const auto& p : policies)
    jp.push_back({{"policy", p.policy},
                  {"nested", p.nested},
                  {"mean_value", p.mean_value},
                  {"mean_ratio", p.mean_ratio},
                  {"worst_ratio", p.worst_ratio},
                  {"max_excess", p.max_excess},
                  {"ordering_checked", p.outside.empty()},
                  {"outside_problem", p.outside}});
  return {{"trace", trace},
          {"n", n_tokens},
          {"budget", budget},
          {"forced_window", forced_window},
          {"heads", heads.size()},
          {"mean_opt_dyn", opt_dyn_sum / nh},
          {"mean_static_sum", static_sum / nh},
          {"opt_dyn_over_static_sum", opt_dyn_sum / static_sum},
          {"violations", violations},
          {"policies", jp}};
}

std::optional<OfflineOracleResult> run_offline_oracle(const Trace& tr, const OfflineOracleRequest& request,
                                                      const WorkTeam& team, const std::string& name) {
  request.validate();
  CompetitiveOptions co;
  std::unique_ptr<CompetitivePlan> plan;
  team.together([&] {
    co.forced_window = request.forced_window;
    for (const PolicyId id : request.policies) {
      ReplayOptions ro;
      ro.run = request.run.build(id, &tr);
      co.policies.push_back(std::move(ro));
    }
    plan = std::make_unique<CompetitivePlan>(tr, co);
  });
  std::optional<std::vector<HeadCompetitive>> heads = team.run(*plan, "t0", "oracle --offline");
  if (!heads) return std::nullopt;
  OfflineOracleResult r;
  r.trace = name;
  r.budget = co.policies.front().run.budget.str();
  r.n_tokens = tr.n_tokens;
  r.forced_window = request.forced_window;
  r.heads = std::move(*heads);
  require(!r.heads.empty(), "the offline oracle chose no head");
  for (const auto& pr : r.heads.front().policies) {
    OfflinePolicySummary s;
    s.policy = pr.policy;
    s.nested = pr.nested;
    s.worst_ratio = 1e300;
    r.policies.push_back(s);
  }
  for (const auto& h : r.heads) {
    r.opt_dyn_sum += h.opt_dyn;
    r.static_sum += h.static_sum;
    r.violations += static_cast<long>(h.violations.size());
    for (size_t x = 0; x < h.policies.size(); ++x) {
      const auto& pr = h.policies[x];
      OfflinePolicySummary& s = r.policies[x];
      s.mean_ratio += pr.ratio;
      s.worst_ratio = std::min(s.worst_ratio, pr.ratio);
      s.mean_value += pr.value;
      s.max_excess = std::max(s.max_excess, pr.value - h.opt_dyn);
      if (s.outside.empty()) s.outside = pr.outside;
    }
  }
  const double nh = static_cast<double>(r.heads.size());
  for (auto& s : r.policies) {
    s.mean_ratio /= nh;
    s.mean_value /= nh;
  }
  return r;
}

}  // namespace kvo
