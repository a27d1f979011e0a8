// Greedy generation with the full KV cache: `kvoracle generate` as a library call.
#pragma once
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "kvo/core/field_schema.hpp"
#include "kvo/model/llama.hpp"

namespace kvo::model {

struct GenerateRequest {
  int max_tokens = 32;                             // tokens to generate at most
  bool stop_at_eos = true;                         // stop after the tokenizer's end-of-sequence token
  void validate() const;                           // kvo::Error: max_tokens below 1
  static const Schema<GenerateRequest>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;
  static GenerateRequest from_json(const nlohmann::json& j);
};

struct GenerateResult {
  std::vector<int> ids;  // the generated ids (the end-of-sequence token included when it came)
  std::string text;      // their decoding
};

// Greedy (argmax, ties to the smallest id) continuation of `prompt` (token ids, not empty).
GenerateResult generate(const Llama& model, std::span<const int> prompt, const GenerateRequest& request = {});

}  // namespace kvo::model
