// Fuzz target: SmolLM2's real tokenizer (the GGUF that scripts/fetch-model installs) on arbitrary
// text. Properties: encoding fails only on ill-formed UTF-8 or on a byte the vocabulary has no
// symbol for (SmolLM2 lacks some control bytes), with that kvo::Error; every id is in
// the vocabulary; without special-token parsing, decoding the ids gives back the exact input
// bytes (byte-level BPE loses nothing); decoding arbitrary ids works or fails with one kvo::Error.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kvo/core/error.hpp"
#include "kvo/model/gguf.hpp"
#include "kvo/model/model_path.hpp"
#include "kvo/model/tokenizer.hpp"

namespace {
std::unique_ptr<kvo::model::GgufFile> g_file;
std::unique_ptr<kvo::model::Tokenizer> g_tok;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  try {
    g_file = std::make_unique<kvo::model::GgufFile>(kvo::model::default_model_path());
    g_tok = std::make_unique<kvo::model::Tokenizer>(*g_file);
  } catch (const kvo::Error& e) {
    std::fprintf(stderr, "fuzz_tokenizer: cannot load the model's tokenizer (%s): run scripts/fetch-model\n", e.what());
    std::exit(1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool special = data[0] & 1;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<int> ids;
  try {
    ids = g_tok->encode(text, special);
  } catch (const kvo::Error& e) {
    if (!std::strstr(e.what(), "is not valid UTF-8") && !std::strstr(e.what(), "has no symbol for byte")) std::abort();
    return 0;
  }
  for (int id : ids)
    if (id < 0 || id >= g_tok->vocab_size()) std::abort();
  if (!special && g_tok->decode(ids) != text) std::abort();  // byte-level BPE must round-trip
  std::vector<int> raw;
  for (std::size_t x = 1; x + 4 <= size && raw.size() < 64; x += 4) {
    std::int32_t v;
    __builtin_memcpy(&v, data + x, 4);
    raw.push_back(v);
  }
  try {
    (void)g_tok->decode(raw);
  } catch (const kvo::Error&) {
  }
  return 0;
}
