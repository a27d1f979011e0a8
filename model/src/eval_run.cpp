#include "kvo/model/eval_run.hpp"

#include "kvo/core/error.hpp"
#include "kvo/core/json_fields.hpp"

namespace kvo::model {

void EvalRequest::validate() const {
  require(tokens >= 2, "tokens must be in [2, the model's context]");
  require(!policies.empty(), "policies: at least one policy");
  require(!budgets.empty(), "budgets: at least one budget");
  options();
}

EvalOptions EvalRequest::options() const {
  EvalOptions o;
  o.tokens = tokens;
  o.policies = policies;
  for (const std::string& b : budgets) o.budgets.push_back(Amount::parse(b));
  require(!policies.empty(), "policies: at least one policy");
  o.run = run.build(policies.front());  // evaluate_policies checks every policy's parameters
  o.on_token = on_token;
  return o;
}

nlohmann::json EvalRequest::to_json() const {
  return {
      {"tokens", tokens}, {"policies", policy_name_list(policies)}, {"budgets", budgets}, {"run", kvo::to_json(run)}};
}

EvalRequest EvalRequest::from_json(const nlohmann::json& j) {
  EvalRequest r;
  read_json_fields(j, "eval request", [&](const std::string& key, const nlohmann::json& value) {
    if (key == "tokens") {
      r.tokens = value.get<int>();
    } else if (key == "policies") {
      r.policies = parse_policy_names(value.get<std::vector<std::string>>());
    } else if (key == "budgets") {
      r.budgets = value.get<std::vector<std::string>>();
    } else if (key == "run") {
      r.run = run_options_from_json(value);
    } else {
      return false;
    }
    return true;
  });
  return r;
}

nlohmann::json eval_result_json(const EvalResult& r, const std::string& text_name) {
  nlohmann::json points = nlohmann::json::array();
  for (const EvalPoint& p : r.points)
    points.push_back({{"policy", p.policy},
                      {"budget", p.budget},
                      {"k", p.k},
                      {"ppl", p.ppl},
                      {"mean_kl", p.mean_kl},
                      {"peak_bytes", p.peak_bytes}});
  return {{"text", text_name},
          {"tokens", r.tokens},
          {"full_ppl", r.full_ppl},
          {"full_bytes", r.full_bytes},
          {"points", points}};
}

EvalResult run_eval(const Llama& model, const std::string& text, const EvalRequest& request) {
  request.validate();
  return evaluate_policies(model, text, request.options());
}

}  // namespace kvo::model
