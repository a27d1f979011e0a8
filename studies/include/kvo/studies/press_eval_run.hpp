// `kvoracle eval prefill` as a library call: a request (prompt length, presses and compression
// ratios with kvpress's parameters, kvoracle policies as prefill presses; validate() and a JSON
// form) with the model and a text in, kvpress's protocol in closed loop and its JSON form out.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/budget_scope.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/report/report.hpp"
#include "kvo/studies/press_eval.hpp"

namespace kvo::studies {

struct PressEvalRequest {
  int tokens = 256;                              // prompt + continuation: the text's first n tokens
  int prompt_len = 0;                            // P, compressed once: 1 <= P <= tokens - 2
  std::string presses = "all";                   // comma-separated kvpress presses, or all
  std::vector<double> ratios = {0.5, 0.8, 0.9};  // compression ratios of the presses, policies and references
  PressOptions press;                            // press parameters (window_size, n_sink, ...), kvpress's defaults
  std::vector<PolicyId> policies;                // kvoracle's policies as prefill presses (none by default)
  RunOptions run;                                // their parameters (budget and trace selection are not read)
  std::vector<BudgetScope> scopes = {BudgetScope::Head};  // the mass optimum's rows: per head and/or shared budgets
  std::vector<double> alpha_safeguard;                    // AdaKVPress around each press, per value
  std::function<void()> on_row;                           // progress: one call per finished row

  // kvo::Error naming the option: prompt_len or tokens out of range, an unknown press, a ratio
  // outside [0, 1), a policy parameter out of range, no scope, an alpha_safeguard outside [0, 1]. (A prompt a press
  // cannot serve, or a text shorter than `tokens`, is refused by run_press_eval before any decoding.)
  void validate() const;
  static const Schema<PressEvalRequest>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;                   // every field but the hook
  static PressEvalRequest from_json(const nlohmann::json& j);
  PressEvalOptions options() const;  // validated
};

// What `kvoracle eval prefill --json` writes: text (the caller's name for it), tokens, prompt_len,
// full_nll, full_bytes and one row per set.
nlohmann::json press_eval_result_json(const PressEvalResult& result, const std::string& text_name);
// What `kvoracle eval prefill` shows (study_reports.cpp): per set and ratio its retained mass,
// output error, NLL against the full cache's, mean KL and K/V bytes, and "kl.svg", mean KL against
// the prompt share kept.
Report press_eval_report(const PressEvalResult& result, const std::string& text_name);

PressEvalResult run_press_eval(const model::Llama& model, const std::string& text, const PressEvalRequest& request);

}  // namespace kvo::studies
