// Closed-loop evaluation of eviction policies on the real model: teacher-forced decoding of a text
// with real eviction (EvictingDecoder) for each policy and budget, against the full cache:
// perplexity, mean KL divergence KL(full || evicted) of the next-token distribution, and the
// peak K/V bytes held. The "oracle" policy evicts along the dynamic offline optimum (min-cost
// flow, retained attention mass) of the full-attention trace of the same text: the what-if
// reference no online policy can beat on that objective.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kvo/core/budget.hpp"
#include "kvo/core/policy_factory.hpp"
#include "kvo/model/llama.hpp"

namespace kvo::model {

struct EvalOptions {
  int tokens = 256;
  std::vector<std::string> policies = {"h2o", "tova", "streaming", "window", "oracle"};
  std::vector<Amount> budgets;     // fractions or token counts; >= tokens means the full cache
  PolicySpec params;               // sinks, history, objective (the name is set per policy)
  std::function<void()> on_token;  // progress: one call per decoded token
};

struct EvalPoint {
  std::string policy, budget;
  int k = 0;  // slots per (layer, KV head)
  double ppl = 0.0, mean_kl = 0.0;
  size_t peak_bytes = 0;  // K/V rows held, all layers and KV heads
};

struct EvalResult {
  int tokens = 0;
  double full_ppl = 0.0;
  size_t full_bytes = 0;
  std::vector<EvalPoint> points;  // policies x budgets, in option order
};

// Work units for a progress bar (decoded tokens, the full pass included).
long eval_units(const EvalOptions& options);
EvalResult evaluate_policies(const Llama& model, const std::string& text, const EvalOptions& options);

}  // namespace kvo::model
