// Fuzz target: the GGUF reader (header, metadata, tensor infos, dequantisation) and the tokenizer
// built from a GGUF vocabulary, on arbitrary bytes. Any input must end in a result or in one
// kvo::Error; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_support.hpp"
#include "kvo/model/gguf.hpp"
#include "kvo/model/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const kvo::model::GgufFile f(std::span<const unsigned char>(data, size), "fuzz");
    for (const auto& t : f.tensors()) {
      if (t.numel() > (1 << 20)) continue;  // bounded work per input
      kvo::fuzz::expect_clean([&] { (void)f.dequantize(t); });
    }
    for (const char* key : {"general.architecture", "llama.block_count", "llama.rope.freq_base"}) {
      kvo::fuzz::expect_clean([&] { (void)f.get_string(key); });
      kvo::fuzz::expect_clean([&] { (void)f.get_uint(key); });
      kvo::fuzz::expect_clean([&] { (void)f.get_float(key); });
    }
    const kvo::model::Tokenizer tok(f);
    const auto ids = tok.encode("Hello, world 123 <|im_start|>", true);
    (void)tok.decode(ids);
  } catch (const kvo::Error&) {
  }
  return 0;
}
