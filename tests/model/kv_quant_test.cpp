// Group-wise asymmetric quantization of cached K/V: every value within half a step of itself, at
// most 2^bits levels per group, constant groups and bits = 0 untouched, bad settings refused.
#include "kvo/model/kv_quant.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "kvo/core/error.hpp"

using namespace kvo;
using namespace kvo::model;

TEST(KvQuant, ValuesStayWithinHalfAStepAndUseAtMost2PowBitsLevels) {
  std::mt19937 g(3);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> x(150);
  for (float& v : x) v = d(g);
  const std::vector<float> orig = x;
  const KvQuantization q{4, 64};
  quantize_dequantize(x, q);
  for (size_t a = 0; a < x.size(); a += 64) {
    const size_t b = std::min(x.size(), a + 64);
    const auto [lo, hi] = std::minmax_element(orig.begin() + static_cast<long>(a), orig.begin() + static_cast<long>(b));
    const float step = (*hi - *lo) / 15.0f;
    std::set<float> levels;
    for (size_t i = a; i < b; ++i) {
      EXPECT_LE(std::abs(x[i] - orig[i]), 0.5f * step * (1 + 1e-5f)) << i;
      levels.insert(x[i]);
    }
    EXPECT_LE(levels.size(), 16u);
    EXPECT_NEAR(*std::min_element(x.begin() + static_cast<long>(a), x.begin() + static_cast<long>(b)), *lo, 1e-5f);
  }
}

TEST(KvQuant, ConstantGroupsAndOffAreUntouchedAndBadSettingsRefused) {
  std::vector<float> c(64, 1.25f);
  quantize_dequantize(c, {4, 64});
  EXPECT_EQ(c, std::vector<float>(64, 1.25f));
  std::vector<float> x = {0.1f, -3.0f, 2.7f};
  const auto orig = x;
  quantize_dequantize(x, {0, 64});
  EXPECT_EQ(x, orig);
  EXPECT_THROW((KvQuantization{1, 64}.validate()), Error);
  EXPECT_THROW((KvQuantization{9, 64}.validate()), Error);
  EXPECT_THROW((KvQuantization{4, 0}.validate()), Error);
  EXPECT_NO_THROW((KvQuantization{8, 32}.validate()));
}
