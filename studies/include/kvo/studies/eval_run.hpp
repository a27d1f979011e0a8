// `kvoracle eval` as a library call: a request (policies, budgets, run options; validate() and a
// JSON form) with the model and a text in, the closed-loop result and its JSON form out. The CLI
// and Python's Model.eval are adapters over run_eval.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/run_options.hpp"
#include "kvo/proofs_check/report.hpp"
#include "kvo/report/report.hpp"
#include "kvo/studies/eval.hpp"

namespace kvo::studies {

struct EvalRequest {
  int tokens = 256;  // the text's first n tokens, teacher-forced
  std::vector<PolicyId> policies = default_policies(PolicyListUse::Eval);
  std::vector<std::string> budgets = {"5%", "10%", "20%", "50%", "100%"};  // totals: ratios or token counts
  // Policy parameters, recent, budget_overrides, seed. Not read: budget (each of `budgets` in
  // turn), and the trace selection (layers, heads, gqa, prompt_len): eval decodes a whole text.
  RunOptions run;
  // 0: K/V in fp32. 2..8: every point also with its K/V quantized to kv_bits in groups of kv_group
  // along the head dimension (EvalOptions::kv), and the full cache so quantized.
  int kv_bits = 0, kv_group = 64;
  std::function<void()> on_token;  // progress: one call per decoded token

  // kvo::Error naming the option: tokens below 2, no policy, no budget, a budget that does not
  // parse, a policy parameter out of range, kv_bits not 0 or in [2, 8], kv_group below 1.
  void validate() const;
  static const Schema<EvalRequest>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;              // every field but the hook
  static EvalRequest from_json(const nlohmann::json& j);
  EvalOptions options() const;  // validated
};

// The paper's closed-loop experiments (E4, E5, E6, E9; kvo/proofs_check/paper_experiments.hpp) on
// the perplexities of a run, at every budget whose points hold a claim's policies.
std::vector<CheckRecord> eval_paper_experiments(const EvalResult& result);

// What `kvoracle eval --json` writes: text (the caller's name for it), tokens, full_ppl,
// full_bytes, one point per policy and budget, and the records of eval_paper_experiments
// ("paper_experiments").
nlohmann::json eval_result_json(const EvalResult& result, const std::string& text_name);
// What `kvoracle eval` shows (study_reports.cpp): per policy and budget its perplexity, its ratio
// to the full cache's, mean KL and the K/V bytes held, the paper's experiments, and
// "perplexity.svg", perplexity against the kept share.
Report eval_report(const EvalResult& result, const std::string& text_name);

EvalResult run_eval(const model::Llama& model, const std::string& text, const EvalRequest& request);

}  // namespace kvo::studies
