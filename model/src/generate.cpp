#include "kvo/model/generate.hpp"

#include "kvo/core/error.hpp"
#include "kvo/core/field_schema.hpp"

namespace kvo::model {

void GenerateRequest::validate() const { require(max_tokens >= 1, "max_tokens must be >= 1"); }

const Schema<GenerateRequest>& GenerateRequest::schema() {
  using R = GenerateRequest;
  static const Schema<R> schema(
      "generate request",
      {member(&R::max_tokens, {.name = "max_tokens", .help = "tokens to generate", .flag = "--tokens", .alias = "-n"}),
       member(&R::stop_at_eos, {.name = "stop_at_eos", .help = "stop at the end-of-sequence token", .cli = false})});
  return schema;
}

nlohmann::json GenerateRequest::to_json() const { return schema().to_json(*this); }
GenerateRequest GenerateRequest::from_json(const nlohmann::json& j) { return schema().from_json(j); }

GenerateResult generate(const Llama& model, std::span<const int> prompt, const GenerateRequest& request) {
  request.validate();
  require(!prompt.empty(), "the prompt is empty");
  KvCache cache = model.new_cache(static_cast<int>(prompt.size()) + request.max_tokens);
  MatrixRM logits = model.forward(prompt, cache);
  GenerateResult r;
  for (int t = 0; t < request.max_tokens; ++t) {
    Eigen::Index best = 0;
    logits.row(logits.rows() - 1).maxCoeff(&best);  // ties: the smallest id
    const int next = static_cast<int>(best);
    r.ids.push_back(next);
    if (request.stop_at_eos && next == model.tokenizer().eos()) break;
    if (t + 1 < request.max_tokens) logits = model.forward(std::span<const int>(&next, 1), cache);
  }
  r.text = model.tokenizer().decode(r.ids);
  return r;
}

}  // namespace kvo::model
