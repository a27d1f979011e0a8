// The forward pass: incremental decoding with the KV cache equals one batch; perplexity on real
// text is that of a working model; the recorder reproduces the committed golden trace.
#include "kvo/model/llama.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>

#include "kvo/core/error.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/model/gguf.hpp"
#include "kvo/model/recorder.hpp"
#include "model_fixture.hpp"

using namespace kvo;

TEST(Llama, IncrementalDecodingEqualsOneBatch) {
  const auto& m = test::shared_model();
  auto ids = m.tokenizer().encode(test::gpl3_text());
  ids.resize(24);
  auto c1 = m.new_cache(24);
  const model::MatrixRM batch = m.forward(ids, c1);
  auto c2 = m.new_cache(24);
  m.forward(std::span<const int>(ids.data(), 10), c2);
  for (int t = 10; t < 24; ++t) {
    const model::MatrixRM one = m.forward(std::span<const int>(ids.data() + t, 1), c2);
    const float scale = batch.row(t).cwiseAbs().maxCoeff();
    EXPECT_LT((one.row(0) - batch.row(t)).cwiseAbs().maxCoeff(), 1e-4f * scale) << t;
  }
  EXPECT_EQ(c2.length, 24);
}

TEST(Llama, GreedyContinuationIsSensible) {
  const auto& m = test::shared_model();
  const auto ids = m.tokenizer().encode("The capital of France is");
  auto cache = m.new_cache(16);
  const model::MatrixRM logits = m.forward(ids, cache);
  Eigen::Index best = 0;
  logits.row(logits.rows() - 1).maxCoeff(&best);
  EXPECT_EQ(m.tokenizer().decode({static_cast<int>(best)}), " Paris");
}

TEST(Llama, PerplexityOfRealTextIsThatOfAWorkingModel) {
  const auto& m = test::shared_model();
  auto ids = m.tokenizer().encode(test::gpl3_text());
  ids.resize(256);
  const double ppl = std::exp(model::mean_nll(m, ids, 100));
  // A broken forward pass gives thousands (uniform = 49152); shuffled text is far worse.
  EXPECT_GT(ppl, 5.0);
  EXPECT_LT(ppl, 40.0);
  std::vector<int> shuffled = ids;
  std::reverse(shuffled.begin(), shuffled.end());
  EXPECT_GT(std::exp(model::mean_nll(m, shuffled, 100)), 3 * ppl);
}

// tests/data/golden-gpl3-128.safetensors was made by
//   kvoracle record --text /usr/share/common-licenses/GPL-3 --tokens 128 --layers 0,15,29 --out ...
TEST(Llama, RecorderReproducesTheGoldenTrace) {
  const Trace golden = read_trace(test::source_dir() + "/tests/data/golden-gpl3-128.safetensors");
  model::RecordOptions o;
  o.tokens = 128;
  o.layers = {0, 15, 29};
  o.chunk = 48;  // a different chunking must not matter
  const Trace tr = model::record_trace(test::shared_model(), test::gpl3_text(), o);
  ASSERT_EQ(tr.tokens, golden.tokens);
  EXPECT_EQ(tr.metadata.at("model_sha256"), golden.metadata.at("model_sha256"));
  for (int l = 0; l < 3; ++l)
    for (auto [ours, want] : {std::pair{&tr.q[l], &golden.q[l]}, {&tr.k[l], &golden.k[l]}, {&tr.v[l], &golden.v[l]}}) {
      ASSERT_EQ(ours->size(), want->size());
      float scale = 0, diff = 0;
      for (size_t x = 0; x < want->size(); ++x) {
        scale = std::max(scale, std::fabs((*want)[x]));
        diff = std::max(diff, std::fabs((*ours)[x] - (*want)[x]));
      }
      EXPECT_LT(diff, 1e-3f * scale) << "layer slot " << l;
    }
}

// Limits: a model larger than the memory limit is refused from its header, and a NaN weight is
// reported with its tensor and place.
TEST(Llama, AModelLargerThanTheMemoryLimitIsRefusedBeforeLoading) {
  ::setenv("KVO_MEMORY_LIMIT", "64M", 1);
  std::string e;
  try {
    model::Llama m(test::model_path());
  } catch (const Error& err) {
    e = err.what();
  }
  ::unsetenv("KVO_MEMORY_LIMIT");
  EXPECT_NE(e.find("(weights dequantised to fp32) needs about"), std::string::npos) << e;
  EXPECT_NE(e.find("more than the 64.0 MiB available (KVO_MEMORY_LIMIT)"), std::string::npos) << e;
}

TEST(Llama, ANaNWeightIsReportedWithItsTensorAndPlace) {
  std::ifstream in(test::model_path(), std::ios::binary);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string name = "output_norm.weight";
  size_t at = 0;
  std::uint32_t type = 0;
  {
    const model::GgufFile f(std::span<const unsigned char>(bytes), "model");
    const auto& t = f.tensor(name);
    at = static_cast<size_t>(f.data(t) - bytes.data());
    type = t.type;
  }
  ASSERT_EQ(type, 0u) << "expected an F32 norm weight";  // SmolLM2's norms are F32 in every GGUF
  const float nan = std::nanf("");
  std::memcpy(bytes.data() + at + 4 * 5, &nan, 4);
  const auto path = std::filesystem::temp_directory_path() / "kvo-nan-model.gguf";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  std::string e;
  try {
    model::Llama m(path.string());
  } catch (const Error& err) {
    e = err.what();
  }
  std::filesystem::remove(path);
  EXPECT_EQ(e, "NaN in model tensor 'output_norm.weight' at row 0, column 5");
}
