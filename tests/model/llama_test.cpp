// The forward pass: incremental decoding with the KV cache equals one batch; perplexity on real
// text is that of a working model; the recorder reproduces the committed golden trace.
#include "kvo/model/llama.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kvo/core/trace_io.hpp"
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
