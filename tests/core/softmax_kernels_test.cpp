// exp_fp64 against the long-double exp (<= 1 ulp) and IEEE special values; lane_sum's order
// (the same bits through an index list, close to the exact sum); softmax built on both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kvo/core/attention.hpp"
#include "kvo/core/exp_fp64.hpp"
#include "kvo/core/lane_sum.hpp"

using namespace kvo;

namespace {

// |exp_fp64(x) - e^x| in units of the last place of the result (long double reference).
double ulp_error(double x) {
  const double a = exp_fp64(x);
  const long double ref = std::exp(static_cast<long double>(x));
  const double ulp = std::nextafter(a, std::numeric_limits<double>::infinity()) - a;
  return static_cast<double>(std::fabs(static_cast<long double>(a) - ref) / ulp);
}

}  // namespace

TEST(ExpFp64, WithinOneUlpOverTheWholeRange) {
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> wide(-708.0, 709.7), softmax_range(-50.0, 0.0), near0(-1e-3, 1e-3);
  double worst = 0.0;
  for (int t = 0; t < 300000; ++t)
    for (double x : {wide(g), softmax_range(g), near0(g)}) worst = std::max(worst, ulp_error(x));
  EXPECT_LE(worst, 1.0);
  // Subnormal results: within one unit of the smallest subnormal.
  for (double x = -745.0; x < -708.4; x += 0.37)
    EXPECT_LE(std::fabs(exp_fp64(x) - std::exp(x)), std::numeric_limits<double>::denorm_min()) << x;
}

TEST(ExpFp64, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(exp_fp64(0.0), 1.0);
  EXPECT_EQ(exp_fp64(-0.0), 1.0);
  EXPECT_EQ(exp_fp64(-inf), 0.0);
  EXPECT_EQ(exp_fp64(inf), inf);
  EXPECT_EQ(exp_fp64(709.79), inf);
  EXPECT_EQ(exp_fp64(1e300), inf);
  EXPECT_EQ(exp_fp64(-746.0), 0.0);
  EXPECT_EQ(exp_fp64(-1e300), 0.0);
  EXPECT_GT(exp_fp64(-745.1), 0.0);  // the smallest subnormal, as e^-745.1 rounds
  EXPECT_TRUE(std::isnan(exp_fp64(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_EQ(exp_fp64(1.0), std::exp(1.0));
}

TEST(LaneSum, SameBitsThroughAnIndexListAndCloseToTheExactSum) {
  std::mt19937_64 g(5);
  std::exponential_distribution<double> e(1.0);
  for (size_t n : {0, 1, 7, 8, 9, 63, 1000}) {
    std::vector<double> v(n);
    for (double& x : v) x = e(g);
    std::vector<int> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::shuffle(idx.begin(), idx.end(), g);
    std::vector<double> scattered(n);
    for (size_t t = 0; t < n; ++t) scattered[static_cast<size_t>(idx[t])] = v[t];
    const double direct = lane_sum(n, [&](size_t t) { return v[t]; });
    const double gathered = lane_sum(n, [&](size_t t) { return scattered[static_cast<size_t>(idx[t])]; });
    EXPECT_EQ(direct, gathered) << n;
    long double exact = 0;
    for (double x : v) exact += x;
    EXPECT_NEAR(direct, static_cast<double>(exact), 1e-14 * std::max(1.0, static_cast<double>(exact))) << n;
  }
  // The lane order: element t in lane t % 8, lanes added pairwise.
  const std::vector<double> v = {1e16, 1.0, 0, 0, 0, 0, 0, 0, -1e16};
  EXPECT_EQ(lane_sum(v.size(), [&](size_t t) { return v[t]; }), 1.0);  // lane 0: 1e16 - 1e16, lane 1: 1
}

TEST(Softmax, SumsToOneAndIsUniformWhenEveryLogitIsMinusInfinity) {
  std::mt19937_64 g(9);
  std::normal_distribution<double> z(0.0, 4.0);
  std::vector<double> lg(333), p(333);
  for (double& x : lg) x = z(g);
  softmax(lg, p);
  const double m = *std::max_element(lg.begin(), lg.end());
  long double total = 0, ref_total = 0;
  for (double x : lg) ref_total += std::exp(static_cast<long double>(x - m));
  for (size_t t = 0; t < p.size(); ++t) {
    total += p[t];
    const double ref = static_cast<double>(std::exp(static_cast<long double>(lg[t] - m)) / ref_total);
    EXPECT_NEAR(p[t], ref, 2e-15 * ref) << t;  // a few ulp: exp, the sum's rounding, the quotient
  }
  EXPECT_NEAR(static_cast<double>(total), 1.0, 1e-15);
  std::vector<double> dead(4, -std::numeric_limits<double>::infinity()), u(4);
  softmax(dead, u);
  for (double x : u) EXPECT_EQ(x, 0.25);
}
