// The scorer's blocked dot products (multi-versioned per x86-64 level in a portable build, see
// kvo/core/multiversion.hpp) against the plain index-order dot compiled here for the baseline:
// the same bits whichever version this CPU runs.
#include "kvo/gpu/scorer_math.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

using namespace kvo::scorer;

TEST(ScorerMath, BlockedDotsGiveTheBaselineBits) {
  std::mt19937_64 g(31);
  std::normal_distribution<float> z(0.f, 1.f);
  for (int d : {16, 64, 80}) {
    const int slots = 45;  // one group of four blocks, one more block, a partly used last block
    const int blocks = (slots + kLanes - 1) / kLanes;
    std::vector<float> q(static_cast<size_t>(d)), k(static_cast<size_t>(slots) * d);
    for (float& x : q) x = z(g);
    for (float& x : k) x = z(g);
    std::vector<double> store(static_cast<size_t>(blocks) * kLanes * d, 0.0);
    for (int s = 0; s < slots; ++s)
      for (int x = 0; x < d; ++x)
        store[static_cast<size_t>(key_offset(s, x, d))] = static_cast<double>(k[static_cast<size_t>(s) * d + x]);
    std::vector<double> got(static_cast<size_t>(blocks) * kLanes);
    store_dot_fp64(q.data(), store.data(), slots, d, got.data());
    // The CUDA kernel's dimension-major store: element x of slot s at x * slots + s.
    std::vector<float> by_dim(static_cast<size_t>(slots) * d);
    for (int s = 0; s < slots; ++s)
      for (int x = 0; x < d; ++x) by_dim[static_cast<size_t>(x) * slots + s] = k[static_cast<size_t>(s) * d + x];
    for (int s = 0; s < slots; ++s) {
      const double want = dot_fp64(q.data(), k.data() + static_cast<size_t>(s) * d, d);
      EXPECT_EQ(std::bit_cast<std::uint64_t>(got[static_cast<size_t>(s)]), std::bit_cast<std::uint64_t>(want))
          << "d " << d << " slot " << s;
      const double strided = strided_dot_fp64(q.data(), by_dim.data() + s, slots, d);
      EXPECT_EQ(std::bit_cast<std::uint64_t>(strided), std::bit_cast<std::uint64_t>(want))
          << "d " << d << " slot " << s;
    }
  }
}
