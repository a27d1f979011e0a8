#include "kvo/studies/press_eval_run.hpp"

#include "kvo/core/adakv.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/press_parameters.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/oracle/prefill_run.hpp"

namespace kvo::studies {

using namespace kvo::model;  // the engine the studies drive

void PressEvalRequest::validate() const {
  require(prompt_len >= 1 && prompt_len <= tokens - 2,
          "prompt_len must be in [1, tokens - 2] so that a continuation of 2 or more tokens follows (tokens " +
              std::to_string(tokens) + ", prompt_len " + std::to_string(prompt_len) + ")");
  require(!scopes.empty(), "scopes: give at least one budget scope for the optimum's rows (head: per-head budgets)");
  for (double a : alpha_safeguard) adakv_safeguard(1, a);
  options();
}

PressEvalOptions PressEvalRequest::options() const {
  PressEvalOptions o;
  o.tokens = tokens;
  o.prompt_len = prompt_len;
  o.presses = press_grid(presses, ratios, press);
  o.reference_ratios = ratios;
  o.reference_scopes = scopes;
  o.alpha_safeguard = alpha_safeguard;
  o.policies = policies;
  o.policy_ratios = ratios;
  // evaluate_presses checks every policy; a shared budget scope is refused with or without one
  o.run = run.build(policies.empty() ? PolicyId::H2O : policies.front());
  o.on_row = on_row;
  return o;
}

const Schema<PressEvalRequest>& PressEvalRequest::schema() {
  using R = PressEvalRequest;
  static const Schema<R> schema(
      "prefill evaluation request",
      fields<R>(
          {{member(&R::tokens,
                   {.name = "tokens", .help = "tokens of the text: the prompt and its continuation", .alias = "-n"}),
            member(&R::prompt_len, {.name = "prompt_len", .help = "prompt length P"}),
            member(&R::presses, {.name = "presses",
                                 .help = "comma-separated kvpress presses, or all (kvoracle presses lists them)"}),
            member(&R::ratios, {.name = "compression_ratio",
                                .help = "fractions of the prompt's keys removed (kvpress's compression_ratio)",
                                .renamed_from = "ratios"}),
            member(&R::policies, {.name = "policies",
                                  .help = "comma-separated kvoracle policies scored as prefill presses",
                                  .alias = "--policy,-p"}),
            member(&R::scopes, {.name = "scopes",
                                .help = "budget scopes of the optimum's rows: head (per-head budgets), layer, "
                                        "layerwise, model (shared budgets of the same total, docs/allocation.md), "
                                        "comma-separated or all"}),
            member(&R::alpha_safeguard,
                   {.name = "alpha_safeguard",
                    .help = "kvpress's AdaKVPress around each press at each alpha_safeguard (comma-separated)"})},
           nested_beside_run("press", &R::press, press_parameters_schema(), "Press parameters",
                             "prefill evaluation request: press"),
           nested("run", &R::run, run_options_schema(), "", "", decoding_run_option)}));
  return schema;
}

nlohmann::json PressEvalRequest::to_json() const { return schema().to_json(*this); }
PressEvalRequest PressEvalRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

nlohmann::json press_eval_result_json(const PressEvalResult& r, const std::string& text_name) {
  nlohmann::json rows = nlohmann::json::array();
  for (const PressEvalRow& row : r.rows)
    rows.push_back({{"set", row.name},
                    {"compression_ratio", row.compression_ratio},
                    {"mean_k", row.mean_k},
                    {"mass_fraction", row.mass_fraction},
                    {"mass_share", row.mass_share},
                    {"output_error", row.output_error},
                    {"nll", row.nll},
                    {"mean_kl", row.mean_kl},
                    {"kv_bytes", row.kv_bytes}});
  return {{"text", text_name},      {"tokens", r.tokens},         {"prompt_len", r.prompt_len},
          {"full_nll", r.full_nll}, {"full_bytes", r.full_bytes}, {"rows", rows}};
}

PressEvalResult run_press_eval(const Llama& model, const std::string& text, const PressEvalRequest& request) {
  request.validate();
  return evaluate_presses(model, text, request.options());
}

}  // namespace kvo::studies
