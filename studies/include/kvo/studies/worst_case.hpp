// How low can attention push an eviction policy? A seeded local search over the attention a
// transformer can produce, softmax(q·k / sqrt(d)) with every query and key of norm at most R, for
// the instance on which a policy's retained mass is the smallest share of the exact offline optimum
// OPT_dyn (or of the per-step optima's sum). The worst instance of each policy is saved as a trace
// and re-verified from the file (kvoracle search attention).
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "kvo/core/field_schema.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/core/trace.hpp"
#include "kvo/report/report.hpp"

namespace kvo::studies {

struct AttentionSearchRequest {
  std::vector<PolicyId> policies = {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands, PolicyId::Streaming};
  int tokens = 32;                  // n: the instance's length
  int head_dim = 64;                // d: SmolLM2's head size
  double radius = 4.0;              // R: |q_i|, |k_j| <= R, so every logit lies in [-R^2/sqrt(d), R^2/sqrt(d)]
  int evaluations = 2000;           // per policy, over every restart
  int restarts = 4;                 // independent random starts, the evaluations split evenly
  std::string against = "opt_dyn";  // the denominator: opt_dyn or per_step (sum_i opt_i)
  std::string out;                  // a directory for worst-<policy>.safetensors (empty: not saved)
  RunOptions run;                   // budget, policy parameters and the seed of the starts and moves
  // kvo::Error naming the field: no policy, tokens below 4, head_dim below 1, radius not positive,
  // evaluations below restarts, restarts below 1, an unknown `against`, a budget that keeps every
  // token (nothing is evicted).
  void validate() const;
  static const Schema<AttentionSearchRequest>& schema();
};

struct SearchPoint {
  long evaluation = 0;  // 1-based count of instances evaluated
  double worst = 0.0;   // the lowest ratio found so far
};

// How a saved instance's value, read back, compares with the search's: "0.3279 (the same)" or
// "0.3300 (DIFFERS from the search's 0.3279)".
std::string reread_verdict(double verified, double found);

// A search's curve as JSON: [{"evaluation": e, "worst": v}, ...].
nlohmann::json search_curve_json(const std::vector<SearchPoint>& curve);

struct PolicySearch {
  std::string policy;
  double worst = 0.0;              // the lowest ratio found (against the request's denominator)
  double opt_dyn_ratio = 0.0;      // value / OPT_dyn on that instance
  double per_step_ratio = 0.0;     // value / sum_i opt_i on that instance
  double random_worst = 0.0;       // the lowest ratio among the restarts' random starts
  long found_at = 0;               // the evaluation that found the worst
  std::vector<SearchPoint> curve;  // every improvement, then the last evaluation
  std::string instance;            // the saved trace ("" when not saved)
  double verified = -1.0;          // the ratio recomputed from the saved file (-1: not saved)
  long theorem_failures = -1;      // verify's C1 and C19 on the saved file (-1: not saved)
};

struct AttentionSearchResult {
  AttentionSearchRequest request;
  std::vector<PolicySearch> policies;  // in the request's order
  nlohmann::json to_json() const;
  Report report() const;
  std::string plot_svg() const;  // the lowest ratio found against the number of evaluations
};

// What both searches refuse, naming the field: no policy, tokens below 4, restarts below 1,
// evaluations below restarts, a budget that keeps every token of some policy.
void validate_search_size(const std::vector<PolicyId>& policies, int tokens, int evaluations, int restarts,
                          const RunOptions& run);

// One instance of the search space as a trace: one layer, one head, q and k of n x d (v = k).
Trace attention_instance(const std::vector<float>& q, const std::vector<float>& k, int n, int d);
// The policy's value over OPT_dyn and over sum_i opt_i on one single-head trace.
struct InstanceRatios {
  double opt_dyn = 0.0, per_step = 0.0;
};
InstanceRatios instance_ratios(const Trace& trace, PolicyId policy, const RunOptions& run);
// verify's theorem failures among `checks` on a saved instance, with the policy replayed.
long theorem_failures(const Trace& trace, PolicyId policy, const RunOptions& run, const std::set<std::string>& checks);

// on_tick: once per evaluation (every policy's evaluations in turn).
AttentionSearchResult search_attention(const AttentionSearchRequest& request,
                                       const std::function<void()>& on_tick = {});

}  // namespace kvo::studies
