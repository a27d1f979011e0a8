// The forward pass: incremental decoding with the KV cache equals one batch (tiny test model); on
// SmolLM2 (the *OnSmolLM2 suites), perplexity on real text is that of a working model and the
// recorder reproduces the committed golden trace.
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

namespace {

// q, k and v of every recorded layer agree within `rel` of each tensor's largest magnitude.
void expect_same_tensors(const Trace& ours, const Trace& want, float rel) {
  ASSERT_EQ(ours.q.size(), want.q.size());
  for (size_t l = 0; l < want.q.size(); ++l)
    for (auto [a, b] : {std::pair{&ours.q[l], &want.q[l]}, {&ours.k[l], &want.k[l]}, {&ours.v[l], &want.v[l]}}) {
      ASSERT_EQ(a->size(), b->size());
      float scale = 0, diff = 0;
      for (size_t x = 0; x < b->size(); ++x) {
        scale = std::max(scale, std::fabs((*b)[x]));
        diff = std::max(diff, std::fabs((*a)[x] - (*b)[x]));
      }
      EXPECT_LT(diff, rel * scale) << "layer slot " << l;
    }
}

}  // namespace

TEST(Llama, IncrementalDecodingEqualsOneBatch) {
  const auto& m = test::tiny_model();
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

TEST(LlamaOnSmolLM2, GreedyContinuationIsSensible) {
  const auto& m = test::real_model();
  const auto ids = m.tokenizer().encode("The capital of France is");
  auto cache = m.new_cache(16);
  const model::MatrixRM logits = m.forward(ids, cache);
  Eigen::Index best = 0;
  logits.row(logits.rows() - 1).maxCoeff(&best);
  EXPECT_EQ(m.tokenizer().decode({static_cast<int>(best)}), " Paris");
}

TEST(LlamaOnSmolLM2, PerplexityOfRealTextIsThatOfAWorkingModel) {
  const auto& m = test::real_model();
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
TEST(LlamaOnSmolLM2, RecorderReproducesTheGoldenTrace) {
  const Trace golden = read_trace(test::source_dir() + "/tests/data/golden-gpl3-128.safetensors");
  model::RecordOptions o;
  o.tokens = 128;
  o.layers = {0, 15, 29};
  o.chunk = 48;  // a different chunking must not matter
  const Trace tr = model::record_trace(test::real_model(), test::gpl3_text(), o);
  ASSERT_EQ(tr.tokens, golden.tokens);
  EXPECT_EQ(tr.metadata.at("model_sha256"), golden.metadata.at("model_sha256"));
  expect_same_tensors(tr, golden, 1e-3f);
}

// A trace recorded along someone else's forward calls (a prefill, then one token at a time) and
// cut to the ids run equals record_trace of those ids; more ids than positions are refused.
TEST(Llama, TraceRecorderAlongGenerationEqualsRecordTrace) {
  const auto& m = test::tiny_model();
  auto ids = m.tokenizer().encode(test::gpl3_text());
  ids.resize(40);
  model::RecordOptions o;
  o.tokens = 56;  // room for 16 more than are run: the trace is cut to 40
  o.layers = {0, 1};
  model::TraceRecorder rec(m, o);
  auto cache = m.new_cache(o.tokens);
  m.forward(std::span<const int>(ids.data(), 30), cache, false, rec.tap());
  for (int t = 30; t < 40; ++t) m.forward(std::span<const int>(ids.data() + t, 1), cache, false, rec.tap());
  const Trace got = rec.finish(ids);
  o.tokens = 40;
  const Trace want = model::record_trace(m, std::span<const int>(ids), o);
  ASSERT_EQ(got.n_tokens, 40);
  EXPECT_EQ(got.tokens, want.tokens);
  expect_same_tensors(got, want, 1e-4f);
  model::TraceRecorder small(m, o);
  std::vector<int> more(41, ids[0]);
  EXPECT_THROW(small.finish(more), Error);
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
  std::ifstream in(test::tiny_model_path(), std::ios::binary);
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
  ASSERT_EQ(type, 0u) << "expected an F32 norm weight";  // the tiny model's weights are F32
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
