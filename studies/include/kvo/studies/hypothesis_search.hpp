// How tight is H2O's guarantee where it applies? A seeded local search over causal attention (any
// logits within [-B, B]) restricted to the traces on which Theorem 4.4's hypotheses hold for some
// alpha < 1 (theta = gamma <= alpha / (10 n); theta is 0 for the accumulated objective), for the one
// on which a policy's worst rho_i = A_i(S_i) / top-k_i is the smallest share of the bound
// (1 - alpha)(1 - 1/e) at the smallest alpha the trace allows (kvoracle search hypotheses).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/field_schema.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/core/trace.hpp"
#include "kvo/report/report.hpp"
#include "kvo/studies/worst_case.hpp"

namespace kvo::studies {

// The hypotheses and the conclusion are measured on the dense accumulated attention A, as verify's
// C15 does: the greedy the theorem covers there is `greedy` on the dense-acc objective (the run's
// default objective here); h2o-paper (Algorithm 2) greedily maximises its own cache's renormalised
// scores instead, which A's hypotheses do not cover.
struct HypothesisSearchRequest {
  std::vector<PolicyId> policies = {PolicyId::Greedy, PolicyId::H2OPaper, PolicyId::H2O};
  int tokens = 16;            // n
  double logit_range = 20.0;  // B: every logit within [-B, B] (real SmolLM2 heads: median max 19)
  // Per policy, over every restart; a restart takes some hundreds of evaluations (thousands at
  // n = 32) to walk from its random start into the hypotheses.
  int evaluations = 4000;
  int restarts = 2;
  std::string out;  // a directory for hypotheses-<policy>.safetensors (empty: not saved)
  // Budget, prompt length, policy parameters and the seed; by default greedy on dense-acc, a prompt
  // of 8 tokens and 4 kept.
  RunOptions run = default_run();
  static RunOptions default_run() {
    RunOptions r;
    r.objective = "dense-acc";
    r.prompt_len = 8;
    r.budget = "4";
    return r;
  }
  // kvo::Error naming the field: no policy, tokens below 4, logit_range not positive, evaluations
  // below restarts, restarts below 1, a budget that keeps every token.
  void validate() const;
  static const Schema<HypothesisSearchRequest>& schema();
};

struct HypothesisSearch {
  std::string policy;
  bool found = false;         // some evaluated trace satisfied the hypotheses
  double worst = 0.0;         // the lowest rho_min / bound over those traces
  double rho_min = 0.0;       // the policy's lowest rho_i on that trace
  double gamma = 0.0;         // its gamma^proof (UDC2 in the lemmas' direction, max over steps)
  double alpha = 0.0;         // the smallest alpha its hypotheses allow: 10 n gamma
  double bound = 0.0;         // (1 - alpha)(1 - 1/e)
  double random_worst = 0.0;  // the lowest rho_min / bound among random starts that satisfied them
  long found_at = 0;
  long admissible = 0;  // evaluated traces that satisfied the hypotheses
  std::vector<SearchPoint> curve;
  std::string instance;
  double verified = -1.0;      // rho_min / bound recomputed from the saved file (-1: not saved)
  long theorem_failures = -1;  // verify's C1, C10 and C11 on the saved file (-1: not saved)
};

struct HypothesisSearchResult {
  HypothesisSearchRequest request;
  std::vector<HypothesisSearch> policies;
  nlohmann::json to_json() const;
  Report report() const;
  std::string plot_svg() const;
};

// A trace whose single head has the given causal logits (n x n row-major; entries above the
// diagonal are ignored): keys are sqrt(n) times the unit vectors, so q_i . k_j / sqrt(n) = L_ij.
Trace logit_instance(const std::vector<double>& logits, int n);

// What verify's C15 measures on a single-head trace for one policy.
struct HypothesisMeasure {
  double rho_min = 1.0, gamma = 0.0, alpha = 0.0, bound = 0.0;
  bool hypotheses_hold = false;  // alpha < 1
  double tightness() const { return rho_min / bound; }
};
HypothesisMeasure measure_hypotheses(const Trace& trace, PolicyId policy, const RunOptions& run);

HypothesisSearchResult search_hypotheses(const HypothesisSearchRequest& request,
                                         const std::function<void()>& on_tick = {});

}  // namespace kvo::studies
