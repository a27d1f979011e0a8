#include "kvo/model/generate.hpp"

#include "kvo/core/error.hpp"
#include "kvo/core/json_fields.hpp"

namespace kvo::model {

void GenerateRequest::validate() const { require(max_tokens >= 1, "max_tokens must be >= 1"); }

nlohmann::json GenerateRequest::to_json() const { return {{"max_tokens", max_tokens}, {"stop_at_eos", stop_at_eos}}; }

GenerateRequest GenerateRequest::from_json(const nlohmann::json& j) {
  GenerateRequest r;
  read_json_fields(j, "generate request", [&](const std::string& key, const nlohmann::json& value) {
    if (key == "max_tokens") {
      r.max_tokens = value.get<int>();
    } else if (key == "stop_at_eos") {
      r.stop_at_eos = value.get<bool>();
    } else {
      return false;
    }
    return true;
  });
  return r;
}

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
