// The real model for tests: loaded once; a missing model is a failure naming the fix (the
// README's test command fetches it), never a silent skip.
#pragma once
#include <gtest/gtest.h>

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

inline const model::Llama& shared_model() {
  static const std::unique_ptr<model::Llama> m = std::make_unique<model::Llama>(model_path());
  return *m;
}

inline std::string source_dir() { return KVO_SOURCE_DIR; }

// The GPL-3 text every Debian machine ships, and its first n tokens under the model's tokenizer.
inline std::string gpl3_text() {
  std::ifstream in("/usr/share/common-licenses/GPL-3");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
inline std::vector<int> gpl3_tokens(size_t n) {
  auto ids = shared_model().tokenizer().encode(gpl3_text());
  ids.resize(n);
  return ids;
}

}  // namespace kvo::test
