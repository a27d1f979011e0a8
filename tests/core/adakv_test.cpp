// kvpress's AdaKVPress in kvoracle (core/adakv.hpp): the safeguard's count rule, a hand example,
// the two extremes (alpha 1: per-head top-k; alpha 0: one top-k over the layer), and random
// layers against a literal transcription of kvpress's steps. The real-model comparison with
// kvpress itself is tests/python/test_kvpress.py.
#include "kvo/core/adakv.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "kvo/core/error.hpp"

using namespace kvo;

namespace {

// kvpress's steps as written: the safeguard's scores raised to the largest float, then the
// n_pruned lowest of the flattened (head-major) scores evicted; equal scores evict the later index.
std::vector<std::vector<int>> kvpress_steps(std::vector<std::vector<double>> s, int n_kept, double alpha) {
  const size_t heads = s.size(), len = s.front().size();
  const int n_safe = adakv_safeguard(n_kept, alpha);
  for (auto& row : s) {
    std::vector<size_t> idx(len);
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return row[a] > row[b]; });
    for (int i = 0; i < n_safe; ++i) row[idx[static_cast<size_t>(i)]] = std::numeric_limits<double>::max();
  }
  std::vector<size_t> flat(heads * len);
  std::iota(flat.begin(), flat.end(), size_t{0});
  std::stable_sort(flat.begin(), flat.end(), [&](size_t a, size_t b) {
    const double x = s[a / len][a % len], y = s[b / len][b % len];
    return x != y ? x < y : a > b;
  });
  std::vector<std::vector<char>> evicted(heads, std::vector<char>(len, 0));
  for (size_t i = 0; i < heads * (len - static_cast<size_t>(n_kept)); ++i) evicted[flat[i] / len][flat[i] % len] = 1;
  std::vector<std::vector<int>> kept(heads);
  for (size_t h = 0; h < heads; ++h)
    for (size_t j = 0; j < len; ++j)
      if (!evicted[h][j]) kept[h].push_back(static_cast<int>(j));
  return kept;
}

}  // namespace

TEST(AdaKV, SafeguardIsKvpressCount) {
  EXPECT_EQ(adakv_safeguard(10, 0.2), 2);
  EXPECT_EQ(adakv_safeguard(4, 0.2), 1);  // int(0.8) = 0, raised to 1
  EXPECT_EQ(adakv_safeguard(0, 0.2), 0);
  EXPECT_EQ(adakv_safeguard(10, 0.0), 0);
  EXPECT_EQ(adakv_safeguard(7, 1.0), 7);
  EXPECT_THROW(adakv_safeguard(10, 1.5), Error);
  EXPECT_THROW(adakv_safeguard(10, -0.1), Error);
}

TEST(AdaKV, HandExample) {
  // Two heads, four positions, n_kept 2 (4 shared slots), safeguard 1 each.
  const std::vector<std::vector<double>> s = {{9, 8, 7, 1}, {0.5, 0.1, 0.2, 0.3}};
  const auto kept = adakv_kept(s, 2, 0.5);
  EXPECT_EQ(kept[0], (std::vector<int>{0, 1, 2}));  // its best, then the layer's two best left
  EXPECT_EQ(kept[1], (std::vector<int>{0}));        // the safeguard only
  const auto no_floor = adakv_kept(s, 2, 0.0);
  EXPECT_EQ(no_floor[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(no_floor[1].empty());
}

TEST(AdaKV, TiesGoToTheLowerHeadThenTheEarlierPosition) {
  const std::vector<std::vector<double>> s = {{1, 1, 1}, {1, 1, 1}};
  const auto kept = adakv_kept(s, 1, 0.0);
  EXPECT_EQ(kept[0], (std::vector<int>{0, 1}));
  EXPECT_TRUE(kept[1].empty());
}

TEST(AdaKV, AlphaOneIsPerHeadTopK) {
  const std::vector<std::vector<double>> s = {{3, 1, 2, 5}, {0, 4, 4, 1}};
  const auto kept = adakv_kept(s, 2, 1.0);
  EXPECT_EQ(kept[0], (std::vector<int>{0, 3}));
  EXPECT_EQ(kept[1], (std::vector<int>{1, 2}));
}

TEST(AdaKV, MatchesKvpressStepsOnRandomLayers) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int heads = 1 + static_cast<int>(rng() % 4), len = 1 + static_cast<int>(rng() % 12);
    const int n_kept = static_cast<int>(rng() % static_cast<unsigned>(len + 1));
    const double alpha = std::vector<double>{0.0, 0.2, 0.5, 1.0}[rng() % 4];
    std::vector<std::vector<double>> s(static_cast<size_t>(heads), std::vector<double>(static_cast<size_t>(len)));
    for (auto& row : s)
      for (double& x : row) x = static_cast<double>(rng() % 5);  // many ties
    const auto ours = adakv_kept(s, n_kept, alpha);
    EXPECT_EQ(ours, kvpress_steps(s, n_kept, alpha)) << "trial " << trial;
    size_t total = 0;
    for (const auto& k : ours) {
      EXPECT_GE(static_cast<int>(k.size()), adakv_safeguard(n_kept, alpha));
      total += k.size();
    }
    EXPECT_EQ(total, static_cast<size_t>(heads * n_kept));
  }
}

TEST(AdaKV, RefusesRaggedScoresAndCountsOutsideThePrompt) {
  EXPECT_THROW(adakv_kept({{1, 2}, {1}}, 1, 0.2), Error);
  EXPECT_THROW(adakv_kept({{1, 2}}, 3, 0.2), Error);
  EXPECT_THROW(adakv_kept({{1, 2}}, -1, 0.2), Error);
}
