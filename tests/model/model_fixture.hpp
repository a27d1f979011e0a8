// The models of the tests, each loaded once; a missing one is a failure naming the fix, never a
// silent skip. tiny_model() is the tiny test model (tests/support/make_tiny_model.py: SmolLM2's
// tokenizer, 2 layers, GQA, random weights), which ctest writes first (fixture tiny_model) and
// names in KVO_TINY_MODEL: the tests of closed-loop mechanics run on it. real_model() is
// SmolLM2-135M (scripts/fetch-model), for the tests whose point is the real model: their suites
// end in OnSmolLM2, and ctest labels them `model` (tests/CMakeLists.txt).
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "kvo/model/llama.hpp"
#include "kvo/model/model_path.hpp"

namespace kvo::test {

inline std::string model_path() {
  const std::string p = model::default_model_path();
  if (!std::filesystem::exists(p)) ADD_FAILURE() << "model " << p << " is missing: run scripts/fetch-model";
  return p;
}

inline std::string tiny_model_path() {
  const char* p = std::getenv("KVO_TINY_MODEL");
  if (p == nullptr || !std::filesystem::exists(p))
    ADD_FAILURE() << "the tiny test model is missing: run the tests through ctest, whose fixture tiny_model writes it "
                     "(tests/support/make_tiny_model.py)";
  return p == nullptr ? std::string() : std::string(p);
}

inline const model::Llama& real_model() {
  static const std::unique_ptr<model::Llama> m = std::make_unique<model::Llama>(model_path());
  return *m;
}

inline const model::Llama& tiny_model() {
  static const std::unique_ptr<model::Llama> m = std::make_unique<model::Llama>(tiny_model_path());
  return *m;
}

inline std::string source_dir() { return KVO_SOURCE_DIR; }

// The GPL-3 text every Debian machine ships, and its first n tokens under the models' tokenizer
// (the tiny model's is SmolLM2's).
inline std::string gpl3_text() {
  std::ifstream in("/usr/share/common-licenses/GPL-3");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
inline std::vector<int> gpl3_tokens(size_t n) {
  auto ids = tiny_model().tokenizer().encode(gpl3_text());
  ids.resize(n);
  return ids;
}

}  // namespace kvo::test
