// The kernels marked KVO_MULTIVERSION (one version per x86-64 level, picked at load time) give the
// bits of the same arithmetic compiled for the baseline here, in this test's own functions: the
// replay engine's softmax and logits do not depend on which CPU runs them.
#include "kvo/core/multiversion.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kvo/core/attention.hpp"
#include "kvo/core/exp_fp64.hpp"
#include "kvo/core/lane_sum.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

// The level whose version of a multi-versioned kernel this machine runs.
std::string running_level() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4";
  if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3";
  return "x86-64 baseline";
#else
  return "not x86-64 with GCC: one version";
#endif
}

// kvo::softmax's arithmetic, out of line in this translation unit (compiled for the baseline in a
// portable build, so its fma is the libm call).
[[gnu::noinline]] std::vector<double> reference_softmax(const std::vector<double>& lg) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : lg) m = std::max(m, x);
  std::vector<double> out(lg.size());
  for (size_t t = 0; t < lg.size(); ++t) out[t] = exp_fp64(lg[t] - m);
  const double s = lane_sum(lg.size(), [&](size_t t) { return out[t]; });
  for (double& x : out) x /= s;
  return out;
}

void expect_same_bits(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t t = 0; t < got.size(); ++t)
    EXPECT_EQ(std::bit_cast<std::uint64_t>(got[t]), std::bit_cast<std::uint64_t>(want[t]))
        << "element " << t << ": " << got[t] << " vs " << want[t];
}

}  // namespace

TEST(Multiversion, SoftmaxGivesTheBaselineBits) {
  RecordProperty("running_level", running_level());
  std::mt19937_64 g(17);
  std::normal_distribution<double> z(0.0, 30.0);
  for (size_t n : {1u, 7u, 8u, 9u, 333u, 1024u}) {
    std::vector<double> lg(n), p(n);
    for (double& x : lg) x = z(g);
    if (n > 8) lg[3] = -std::numeric_limits<double>::infinity();  // a masked key: probability 0
    softmax(lg, p);
    expect_same_bits(p, reference_softmax(lg));
  }
}

namespace {

// Every key of `keys` for query i, one fused chain in index order: the bits every path must give.
std::vector<double> reference_logits(const Trace& tr, int head, int i, const std::vector<int>& keys) {
  const int n = tr.n_tokens, d = tr.head_dim;
  std::vector<double> want(keys.size());
  const float* q = tr.q[0].data() + static_cast<size_t>(head) * n * d + static_cast<size_t>(i) * d;
  for (size_t t = 0; t < keys.size(); ++t) {
    const float* k = tr.k[0].data() + static_cast<size_t>(keys[t]) * d;
    double dot = 0.0;
    for (int x = 0; x < d; ++x) dot = std::fma(static_cast<double>(q[x]), static_cast<double>(k[x]), dot);
    want[t] = tr.attn_scale * dot;
  }
  return want;
}

// head.logits(i, keys) has the reference bits (head is query head h of tr).
void expect_baseline_logits(const HeadView& head, const Trace& tr, int h, int i, const std::vector<int>& keys) {
  std::vector<double> got(keys.size());
  head.logits(i, keys, got);
  expect_same_bits(got, reference_logits(tr, h, i, keys));
}

}  // namespace

TEST(Multiversion, LogitsGiveTheBaselineBits) {
  RecordProperty("running_level", running_level());
  const int n = 77, d = 64;
  const Trace tr = test::random_trace(1, 2, 1, n, d, 23, 0.125);
  const HeadView head(tr, 0, 1);
  std::vector<int> keys;
  for (int j = 0; j < n; j += 2) keys.push_back(j);  // 39 keys: four blocks of 8 and a tail
  expect_baseline_logits(head, tr, 1, n - 1, keys);
}

// Runs of consecutive keys take the tiled path (32 at a time from the transposed keys) when they
// cover a whole tile, and the 8-key path elsewhere; both give the same bits.
TEST(Multiversion, LogitsOverTilesOfConsecutiveKeysGiveTheBaselineBits) {
  const int n = 203, d = 64;
  const Trace tr = test::random_trace(1, 2, 1, n, d, 29, 0.125);
  const HeadView head = HeadView(tr, 0, 0).with_key_tiles();
  const int i = n - 1;
  std::vector<int> keys;
  for (int j = 0; j < 64; ++j) keys.push_back(j);    // two whole tiles
  for (int j = 70; j < 102; ++j) keys.push_back(j);  // 32 consecutive keys across two tiles
  for (int j = 110; j < 190; j += 3) keys.push_back(j);
  for (int j = 192; j <= i; ++j) keys.push_back(j);  // the last, partial tile
  expect_baseline_logits(head, tr, 0, i, keys);
  std::vector<int> all(static_cast<size_t>(i) + 1);
  std::iota(all.begin(), all.end(), 0);
  expect_baseline_logits(head, tr, 0, i, all);
}

// A block of queries over their whole prefixes, tile by tile for all of them, gives each query's
// logits(i, 0..i) bits, whatever the lengths (shorter than a tile, a tile exactly, partial tails).
TEST(Multiversion, PrefixLogitsOfABlockGiveTheBaselineBits) {
  const int n = 203, d = 64;
  const Trace tr = test::random_trace(1, 2, 1, n, d, 31, 0.125);
  const std::vector<int> queries{202, 5, 31, 63, 64, 100};
  const size_t stride = n + 3;
  for (const HeadView& head : {HeadView(tr, 0, 1), HeadView(tr, 0, 1).with_key_tiles()}) {
    std::vector<double> out(queries.size() * stride, -1.0);
    head.prefix_logits(queries, out.data(), stride);
    for (size_t b = 0; b < queries.size(); ++b) {
      std::vector<int> keys(static_cast<size_t>(queries[b]) + 1);
      std::iota(keys.begin(), keys.end(), 0);
      expect_same_bits(std::vector<double>(out.begin() + static_cast<long>(b * stride),
                                           out.begin() + static_cast<long>(b * stride + keys.size())),
                       reference_logits(tr, 1, queries[b], keys));
      EXPECT_EQ(out[b * stride + keys.size()], -1.0) << "wrote past query " << queries[b];
    }
  }
}
