// Closed-loop evaluation of eviction policies on the real model: teacher-forced decoding of a text
// with real eviction (EvictingDecoder) for each policy and budget, against the full cache:
// perplexity, mean KL divergence KL(full || evicted) of the next-token distribution, and the
// peak K/V bytes held (at fp32, quantized or not). Offline policies (the registry's `oracle`) evict along the offline
// optimum (min-cost flow, retained attention mass) of the full-attention trace of the same text:
// the what-if reference no online policy can beat on that objective.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kvo/core/run_config.hpp"
#include "kvo/model/kv_quant.hpp"
#include "kvo/model/llama.hpp"

namespace kvo::studies {

struct EvalOptions {
  int tokens = 256;
  // The policies' parameters, the budget's recent part and per-layer / per-head overrides, the
  // seed; run.policy.id is set per policy and the budget's total per point of `budgets`.
  RunConfig run;
  std::vector<PolicyId> policies = default_policies(PolicyListUse::Eval);
  std::vector<Amount> budgets;  // totals: fractions or token counts; >= tokens means the full cache
  // bits > 0: every point also decoded with its K/V stored quantized (kv_quant.hpp), labelled
  // "<policy>+int<bits>", and the full cache so stored, labelled "full+int<bits>" (budget 100%).
  model::KvQuantization kv;
  std::function<void()> on_token;  // progress: one call per decoded token
};

struct EvalPoint {
  PolicyId id = PolicyId::H2O;
  std::string policy, budget;
  int k = 0;  // slots per (layer, KV head) of the total (overrides may give some units others)
  double ppl = 0.0, mean_kl = 0.0;
  size_t peak_bytes = 0;  // K/V rows held, all layers and KV heads
};

struct EvalResult {
  int tokens = 0;
  double full_ppl = 0.0;
  size_t full_bytes = 0;
  BudgetScope budget_scope = BudgetScope::Head;  // who shared each budget (k: a cache unit's share)
  std::string kv_suffix;                         // the quantized points' label suffix ("+int4"); empty: none
  std::vector<EvalPoint> points;                 // policies x budgets, in option order
};

// The label a quantized point's policy name takes ("+int4").
std::string kv_quantized_suffix(const model::KvQuantization& q);

// Work units for a progress bar (decoded tokens, the full pass included).
long eval_units(const EvalOptions& options);
EvalResult evaluate_policies(const model::Llama& model, const std::string& text, const EvalOptions& options);

}  // namespace kvo::studies
