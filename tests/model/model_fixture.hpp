// The real model for tests: loaded once; a missing model is a failure naming the fix (the
// README's test command fetches it), never a silent skip.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "kvo/model/llama.hpp"
#include "kvo/model/model_path.hpp"

namespace kvo::test {

inline std::string model_path() {
  const std::string p = model::default_model_path();
  if (!std::filesystem::exists(p)) ADD_FAILURE() << "model " << p << " is missing: run scripts/fetch-model";
  return p;
}

inline const model::Llama& shared_model() {
  static const std::unique_ptr<model::Llama> m = std::make_unique<model::Llama>(model_path());
  return *m;
}

inline std::string source_dir() { return KVO_SOURCE_DIR; }

}  // namespace kvo::test
