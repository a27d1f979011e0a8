// Where the model lives: $KVO_MODEL, else $KVO_MODEL_DIR/<file>, else ~/.cache/kvoracle/<file>
// (where scripts/fetch-model puts SmolLM2-135M-Instruct.Q4_1.gguf).
#pragma once
#include <string>

namespace kvo::model {

inline constexpr const char* kModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
std::string default_model_path();

}  // namespace kvo::model
