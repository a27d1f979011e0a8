// The oracle top-k reference: with k at least the sequence it is full attention (the batched
// forward pass), and its layered prefill is its token-by-token decoding in another order.
#include "kvo/model/topk_decoder.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"
#include "model_fixture.hpp"

using namespace kvo;

TEST(TopKDecoder, KAtLeastTheSequenceIsFullAttention) {
  const auto& m = test::tiny_model();
  const int n = 24;
  const auto ids = test::gpl3_tokens(n);
  auto cache = m.new_cache(n);
  const model::MatrixRM batch = m.forward(ids, cache);
  model::TopKDecoder dec(m, n, n);
  const model::MatrixRM all = dec.prefill(ids, true);
  for (int t = 0; t < n; ++t)
    EXPECT_LT((all.row(t) - batch.row(t)).cwiseAbs().maxCoeff(), 1e-4f * batch.row(t).cwiseAbs().maxCoeff()) << t;
}

TEST(TopKDecoder, LayeredPrefillEqualsTokenByToken) {
  const auto& m = test::tiny_model();
  const int n = 48, k = 8;
  const auto ids = test::gpl3_tokens(n + 2);
  model::TopKDecoder layered(m, k, n + 2), stepped(m, k, n + 2);
  const model::MatrixRM all = layered.prefill(std::span<const int>(ids.data(), n), true);
  for (int t = 0; t < n; ++t) {
    const Eigen::RowVectorXf one = stepped.step(ids[static_cast<size_t>(t)]);
    EXPECT_LT((all.row(t) - one).cwiseAbs().maxCoeff(), 1e-4f * std::max(1.0f, one.cwiseAbs().maxCoeff())) << t;
  }
  for (int t = n; t < n + 2; ++t) {
    const Eigen::RowVectorXf a = layered.step(ids[static_cast<size_t>(t)]),
                             b = stepped.step(ids[static_cast<size_t>(t)]);
    EXPECT_LT((a - b).cwiseAbs().maxCoeff(), 1e-4f * std::max(1.0f, a.cwiseAbs().maxCoeff()));
  }
  // Attending fewer keys changes the prediction (the reference is not the full cache in disguise).
  auto cache = m.new_cache(n);
  const model::MatrixRM full = m.forward(std::span<const int>(ids.data(), n), cache);
  EXPECT_GT((all.row(n - 1) - full.row(n - 1)).cwiseAbs().maxCoeff(), 1e-3f);
  EXPECT_THROW(layered.prefill(ids), Error);  // beyond its capacity
}
