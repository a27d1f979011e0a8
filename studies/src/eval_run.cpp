#include "kvo/studies/eval_run.hpp"

#include "kvo/core/error.hpp"
#include "kvo/core/request_json.hpp"
#include "kvo/proofs_check/paper_experiments.hpp"

namespace kvo::studies {

using namespace kvo::model;  // the engine the studies drive

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
  o.run = run.build(policies.front(), nullptr,
                    SharedBudgets::Allowed);  // evaluate_policies checks every policy's parameters
  for (PolicyId id : policies) o.run.with_policy(id).validate_budget_scope(SharedBudgets::Allowed);
  o.kv = KvQuantization{kv_bits, kv_group};
  o.kv.validate();
  o.on_token = on_token;
  return o;
}

const Schema<EvalRequest>& EvalRequest::schema() {
  using R = EvalRequest;
  static const Schema<R> schema(
      "eval request",
      fields<R>(
          {{member(&R::tokens, {.name = "tokens", .help = "tokens of the text to decode", .alias = "-n"}),
            member(&R::policies,
                   {.name = "policies",
                    .help = "comma-separated policies ('" + policy_name(PolicyId::Oracle) + "': the offline optimum)",
                    .alias = "--policy,-p"}),
            member(&R::budgets, {.name = "budgets",
                                 .help = "comma-separated budget totals: ratios (20%) or tokens (64); --recent and "
                                         "--budget-override apply to each",
                                 .alias = "--budget,-b"}),
            member(&R::kv_bits, {.name = "kv_bits",
                                 .help = "also run every point with K/V quantized to this many bits (2..8; 0: fp32 "
                                         "only)"}),
            member(&R::kv_group,
                   {.name = "kv_group", .help = "values per quantization group along the head dimension"})},
           nested("run", &R::run, run_options_schema(), "", "", decoding_run_option)}));
  return schema;
}

nlohmann::json EvalRequest::to_json() const { return schema().to_json(*this); }
EvalRequest EvalRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

std::vector<CheckRecord> eval_paper_experiments(const EvalResult& r) {
  LoopMeasurements m;
  m.metric = LoopMetric::Perplexity;
  m.full = r.full_ppl;
  m.quantized_suffix = r.kv_suffix;
  for (const EvalPoint& p : r.points) {
    if (!r.kv_suffix.empty() && p.policy == policy_name(PolicyId::Full) + r.kv_suffix) m.full_quantized = p.ppl;
    const Amount a = Amount::parse(p.budget);
    m.rows.push_back({p.policy, a.is_ratio ? a.value : a.value / r.tokens, p.ppl});
  }
  return paper_experiment_records(m);
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
          {"budget_scope", budget_scope_name(r.budget_scope)},
          {"points", points},
          {"paper_experiments", paper_experiments_json(eval_paper_experiments(r))}};
}

EvalResult run_eval(const Llama& model, const std::string& text, const EvalRequest& request) {
  request.validate();
  return evaluate_policies(model, text, request.options());
}

}  // namespace kvo::studies
