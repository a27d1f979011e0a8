// GGUF reader: a hand-built valid file, one clear error for each kind of broken file, and the
// real model's metadata.
#include "kvo/model/gguf.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "kvo/core/error.hpp"
#include "model_fixture.hpp"

using namespace kvo;
using namespace kvo::model;

namespace {

struct Builder {
  std::string b;
  template <class T>
  Builder& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Builder& str(const std::string& s) {
    put<std::uint64_t>(s.size());
    b += s;
    return *this;
  }
};

// A valid GGUF v3 file: metadata (a string, a uint32, an array of strings), one F32 tensor [2, 3]
// and one Q8_0 tensor [32, 1].
std::string valid_file(std::uint32_t q8_type = 8, std::uint64_t q8_offset = 32) {
  Builder x;
  x.b = "GGUF";
  x.put<std::uint32_t>(3).put<std::uint64_t>(2).put<std::uint64_t>(3);
  x.str("general.architecture").put<std::uint32_t>(8).str("llama");
  x.str("llama.block_count").put<std::uint32_t>(4).put<std::uint32_t>(7);
  x.str("tokenizer.ggml.tokens").put<std::uint32_t>(9).put<std::uint32_t>(8).put<std::uint64_t>(2).str("a").str("b");
  x.str("w").put<std::uint32_t>(2).put<std::uint64_t>(3).put<std::uint64_t>(2).put<std::uint32_t>(0).put<std::uint64_t>(
      0);
  x.str("q")
      .put<std::uint32_t>(2)
      .put<std::uint64_t>(32)
      .put<std::uint64_t>(1)
      .put<std::uint32_t>(q8_type)
      .put<std::uint64_t>(q8_offset);
  while (x.b.size() % 32) x.b += '\0';
  for (int i = 0; i < 6; ++i) x.put<float>(static_cast<float>(i) + 0.5f);
  while (x.b.size() % 32) x.b += '\0';
  x.put<std::uint16_t>(0x3800);  // f16 0.5
  for (int i = 0; i < 32; ++i) x.put<std::int8_t>(static_cast<std::int8_t>(i - 16));
  return x.b;
}

std::string write(const std::string& name, const std::string& bytes) {
  const auto p = std::filesystem::temp_directory_path() / ("kvo_gguf_" + name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

std::string error_of(const std::string& bytes) {
  try {
    GgufFile f(write("broken.gguf", bytes));
    for (const auto& t : f.tensors()) f.dequantize(t);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Gguf, ReadsAHandBuiltFile) {
  const GgufFile f(write("ok.gguf", valid_file()));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_uint("llama.block_count"), 7u);
  EXPECT_EQ(f.metadata()["tokenizer.ggml.tokens"][1], "b");
  const auto w = f.dequantize(f.tensor("w"));
  EXPECT_EQ(w, (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
  EXPECT_EQ(f.tensor("w").rows(), 2u);
  const auto q = f.dequantize(f.tensor("q"));
  EXPECT_EQ(q[0], -8.0f);
  EXPECT_EQ(q[31], 7.5f);
  EXPECT_THROW(f.get_uint("general.architecture"), Error);
  EXPECT_THROW(f.tensor("nope"), Error);
}

TEST(Gguf, BrokenFilesGiveOneClearError) {
  const std::string ok = valid_file();
  std::string bad_magic = ok;
  bad_magic[0] = 'X';
  std::string v2 = ok;
  v2[4] = 2;
  std::string huge_string = ok;
  std::uint64_t big = 1ull << 40;
  std::memcpy(huge_string.data() + 24, &big, 8);  // length of the first key
  const std::vector<std::pair<std::string, std::string>> cases = {
      {ok.substr(0, 10), "too short"},
      {bad_magic, "bad magic"},
      {v2, "version 2"},
      {ok.substr(0, 60), "truncated"},
      {huge_string, "implausible length"},
      {valid_file(8, 1u << 20), "outside the file"},
      {valid_file(8, 33), "not aligned"},
      {valid_file(99), "unknown type 99"},
      {valid_file(14), "type Q6_K, which kvoracle does not dequantise"},
  };
  for (const auto& [bytes, expect] : cases) {
    const std::string e = error_of(bytes);
    EXPECT_NE(e.find(expect), std::string::npos) << "expected '" << expect << "', got '" << e << "'";
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
  EXPECT_NE(error_of(valid_file(14)).find("tensor 'q'"), std::string::npos);
}

TEST(Gguf, RealModelMetadata) {
  const GgufFile f(test::model_path());
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_uint("llama.block_count"), 30u);
  EXPECT_EQ(f.get_uint("llama.attention.head_count"), 9u);
  EXPECT_EQ(f.get_uint("llama.attention.head_count_kv"), 3u);
  EXPECT_EQ(f.get_float("llama.rope.freq_base"), 100000.0);
  EXPECT_EQ(f.tensors().size(), 272u);
}
