// The dense causal attention (core/attention.hpp), computed in blocks of queries over key tiles, is
// each query's own prefix_attention bit for bit, on traces whose lengths end mid-tile and mid-block.
#include "kvo/core/attention.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

TEST(DenseAttention, IsEachQuerysPrefixAttentionBitForBit) {
  for (int n : {1, 5, 33, 77}) {
    const Trace tr = random_trace(1, 2, 1, n, 16, static_cast<std::uint64_t>(n), 2.5);
    for (int h = 0; h < 2; ++h) {
      const HeadView view(tr, 0, h);
      const Eigen::MatrixXd a = dense_attention(view);
      std::vector<int> keys;
      std::vector<double> logits, p;
      for (int i = 0; i < n; ++i) {
        prefix_attention(view, i, keys, logits, p);
        for (int j = 0; j < n; ++j)
          ASSERT_EQ(a(i, j), j <= i ? p[static_cast<size_t>(j)] : 0.0) << "n " << n << " query " << i << " key " << j;
      }
    }
  }
}
