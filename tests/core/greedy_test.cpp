#include "kvo/core/greedy.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

// On thousands of random small instances of every monotone submodular family:
// greedy >= (1 - (1-1/k)^k) OPT, lazy greedy == naive greedy, the a-posteriori bound >= OPT.
TEST(Greedy, NemhauserWolseyFisherBoundAndAposterioriBoundHold) {
  std::mt19937_64 g(7);
  int instances = 0;
  for (auto fam : monotone_families())
    for (int t = 0; t < 1000; ++t, ++instances) {
      const int n = 2 + static_cast<int>(g() % 11);
      const int k = 1 + static_cast<int>(g() % std::min(n, 6));
      auto f = random_function(fam, n, g);
      const double opt = bitmask_opt(*f, k);
      GreedyOptions o;
      o.budget = k;
      const auto naive = naive_greedy(*f, o);
      const auto lazy = lazy_greedy(*f, o);
      const double tol = 1e-12 * std::max(1.0, opt);
      ASSERT_GE(naive.value, nwf_factor(k) * opt - tol) << f->traits().name << " n=" << n << " k=" << k;
      ASSERT_EQ(naive.picks, lazy.picks) << f->traits().name;
      ASSERT_NEAR(naive.value, lazy.value, 1e-12);
      ASSERT_GE(naive.upper_bound, opt - tol);
      ASSERT_TRUE(naive.bound_valid);
      ASSERT_LE(naive.value, opt + tol);
      ASSERT_EQ(static_cast<int>(naive.picks.size()), k);
    }
  EXPECT_EQ(instances, 5000);
}

TEST(Greedy, LazyGreedySavesEvaluations) {
  std::mt19937_64 g(8);
  auto f = random_function(Family::FacilityLocation, 200, g);
  GreedyOptions o;
  o.budget = 20;
  const auto naive = naive_greedy(*f, o);
  const auto lazy = lazy_greedy(*f, o);
  EXPECT_EQ(naive.picks, lazy.picks);
  EXPECT_LT(lazy.evaluations, naive.evaluations / 2);
}

// Stochastic greedy: (1 - 1/e - eps) OPT in expectation; the mean over seeds must reach it.
TEST(Greedy, StochasticGreedyMeetsItsBoundOnAverage) {
  std::mt19937_64 g(9);
  for (auto fam : monotone_families())
    for (int t = 0; t < 100; ++t) {
      const int n = 6 + static_cast<int>(g() % 7);
      const int k = 2 + static_cast<int>(g() % 3);
      auto f = random_function(fam, n, g);
      const double opt = bitmask_opt(*f, k);
      double mean = 0.0;
      GreedyOptions o;
      o.budget = k;
      o.epsilon = 0.2;
      const int seeds = 40;
      for (int s = 0; s < seeds; ++s) {
        o.seed = static_cast<std::uint64_t>(s);
        const auto r = stochastic_greedy(*f, o);
        ASSERT_EQ(static_cast<int>(r.picks.size()), k);
        ASSERT_LE(r.value, opt + 1e-12);
        mean += r.value / seeds;
      }
      EXPECT_GE(mean, (1.0 - std::exp(-1.0) - o.epsilon) * opt - 1e-12) << f->traits().name;
    }
}

TEST(Greedy, StochasticGreedyIsDeterministicPerSeed) {
  std::mt19937_64 g(10);
  auto f = random_function(Family::FacilityLocation, 50, g);
  GreedyOptions o;
  o.budget = 5;
  o.seed = 42;
  EXPECT_EQ(stochastic_greedy(*f, o).picks, stochastic_greedy(*f, o).picks);
}

TEST(Greedy, TiesPickTheSmallestIndex) {
  const ModularConcave f({1.0, 2.0, 2.0, 2.0}, Concave::Identity);
  GreedyOptions o;
  o.budget = 2;
  EXPECT_EQ(naive_greedy(f, o).picks, (std::vector<int>{1, 2}));
  EXPECT_EQ(lazy_greedy(f, o).picks, (std::vector<int>{1, 2}));
}

TEST(Greedy, NwfFactorIsTheFiniteForm) {
  EXPECT_DOUBLE_EQ(nwf_factor(1), 1.0);
  EXPECT_DOUBLE_EQ(nwf_factor(2), 0.75);
  EXPECT_GT(nwf_factor(100), 1.0 - std::exp(-1.0));
}
