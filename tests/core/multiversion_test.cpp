// The kernels marked KVO_MULTIVERSION (one version per x86-64 level, picked at load time) give the
// bits of the same arithmetic compiled for the baseline here, in this test's own functions: the
// replay engine's softmax and logits do not depend on which CPU runs them.
#include "kvo/core/multiversion.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
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

TEST(Multiversion, LogitsGiveTheBaselineBits) {
  RecordProperty("running_level", running_level());
  const int n = 77, d = 64;
  const Trace tr = test::random_trace(1, 2, 1, n, d, 23, 0.125);
  const HeadView head(tr, 0, 1);
  std::vector<int> keys;
  for (int j = 0; j < n; j += 2) keys.push_back(j);  // 39 keys: four blocks of 8 and a tail
  const int i = n - 1;
  std::vector<double> got(keys.size());
  head.logits(i, keys, got);
  std::vector<double> want(keys.size());
  const float* q = tr.q[0].data() + static_cast<size_t>(1) * n * d + static_cast<size_t>(i) * d;
  for (size_t t = 0; t < keys.size(); ++t) {
    const float* k = tr.k[0].data() + static_cast<size_t>(keys[t]) * d;
    double dot = 0.0;
    for (int x = 0; x < d; ++x) dot = std::fma(static_cast<double>(q[x]), static_cast<double>(k[x]), dot);
    want[t] = tr.attn_scale * dot;
  }
  expect_same_bits(got, want);
}
