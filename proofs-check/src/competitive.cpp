#include "kvo/checks/competitive.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <tuple>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/unit_bytes.hpp"
#include "kvo/oracle/offline_oracle.hpp"

namespace kvo {

std::string outside_problem(const std::vector<std::vector<int>>& kept, bool nested, int k, int r) {
  if (!nested) return "re-enters evicted tokens";
  for (size_t i = 0; i < kept.size(); ++i) {
    const auto& s = kept[i];
    if (static_cast<int>(s.size()) > k)
      return "holds " + std::to_string(s.size()) + " > k tokens at step " + std::to_string(i);
    for (int j = std::max(0, static_cast<int>(i) - r + 1); j <= static_cast<int>(i); ++j)
      if (!std::binary_search(s.begin(), s.end(), j))
        return "drops token " + std::to_string(j) + " of the forced window at step " + std::to_string(i);
  }
  return "";
}

OfflineOrdering order_against_optimum(const OfflineProblem& p, const OfflineSolution& opt,
                                      const std::vector<ScheduleRun>& runs) {
  OfflineOrdering o;
  o.opt = opt.value;
  for (double v : top_k_row_sums(p.w, p.budget)) o.static_sum += v;
  const double tol = 1e-9 * std::max(1.0, o.static_sum);
  try {
    o.certificate = dual_bound(p, opt.end, opt.price);
    if (std::fabs(o.certificate - opt.value) > tol)
      o.violations.push_back("certificate gap " + std::to_string(o.certificate - opt.value));
  } catch (const Error& e) {
    o.certificate = NAN;
    o.violations.push_back(std::string("invalid certificate: ") + e.what());
  }
  if (opt.value > o.static_sum + tol) o.violations.push_back("OPT_dyn > sum opt_i");
  for (const ScheduleRun& r : runs) {
    PolicyRatio pr{r.policy, r.nested, schedule_value(p, r.kept), 0.0,
                   outside_problem(r.kept, r.nested, p.budget, p.recent)};
    pr.ratio = opt.value > 0 ? pr.value / opt.value : 1.0;
    if (pr.outside.empty() && pr.value > opt.value + tol)
      o.violations.push_back(r.policy + " beats OPT_dyn by " + std::to_string(pr.value - opt.value));
    o.policies.push_back(std::move(pr));
  }
  return o;
}

CompetitivePlan::CompetitivePlan(const Trace& trace, CompetitiveOptions o) : trace_(trace), o_(std::move(o)) {
  require(!o_.policies.empty(), "competitive ratios need at least one policy");
  for (ReplayOptions ro : o_.policies) {
    ro.record_sets = true;
    ro.threads = 1;
    plans_.emplace_back(trace, std::move(ro));
  }
}

int CompetitivePlan::size() const { return plans_.front().size(); }

std::string CompetitivePlan::name(int unit) const { return plans_.front().name(unit); }

std::vector<HeadCompetitive> CompetitivePlan::run(int unit) const {
  std::vector<std::vector<HeadReplay>> replays;  // per policy, the unit's heads
  for (const auto& plan : plans_) replays.push_back(plan.run(unit));
  std::vector<HeadCompetitive> out(replays.front().size());
  for (size_t x = 0; x < out.size(); ++x) {
    HeadCompetitive& hc = out[x];
    const HeadReplay& first = replays.front()[x];
    hc.layer = first.layer;
    hc.head = first.head;
    hc.k = first.budget.total;
    OfflineProblem p;
    p.w = dense_attention(HeadView(trace_, hc.layer, hc.head));
    p.budget = hc.k;
    p.recent = std::min(o_.forced_window, hc.k);
    std::vector<ScheduleRun> runs;
    for (size_t q = 0; q < plans_.size(); ++q) {
      const ReplayOptions& ro = plans_[q].options();
      const auto probe = make_policy(ro.run.policy);
      runs.push_back({probe->name(), probe->nested(), replays[q][x].kept_sets()});
    }
    OfflineOrdering ord = order_against_optimum(p, solve_offline(p), runs);
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
