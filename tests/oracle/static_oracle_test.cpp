#include "kvo/oracle/static_oracle.hpp"

#include <gtest/gtest.h>

#include <random>

#include "kvo/core/error.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/core/output_fidelity.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

TEST(StaticOracle, BruteForceMatchesIndependentEnumeration) {
  std::mt19937_64 g(11);
  for (auto fam : monotone_families())
    for (int t = 0; t < 300; ++t) {
      const int n = 1 + static_cast<int>(g() % 12);
      const int k = 1 + static_cast<int>(g() % n);
      auto f = random_function(fam, n, g);
      const auto s = solve_brute_force(*f, k);
      ASSERT_NEAR(s.value, bitmask_opt(*f, k), 1e-12);
      ASSERT_NEAR(f->evaluate(s.set), s.value, 1e-12);
      ASSERT_LE(static_cast<int>(s.set.size()), k);
    }
}

TEST(StaticOracle, BranchAndBoundEqualsBruteForce) {
  std::mt19937_64 g(12);
  for (auto fam : monotone_families())
    for (int t = 0; t < 1000; ++t) {
      const int n = 2 + static_cast<int>(g() % 14);
      const int k = 1 + static_cast<int>(g() % std::min(n, 7));
      auto f = random_function(fam, n, g);
      const auto bb = solve_branch_and_bound(*f, k);
      const auto bf = solve_brute_force(*f, k);
      ASSERT_TRUE(bb.exact);
      ASSERT_NEAR(bb.value, bf.value, 1e-9 * std::max(1.0, bf.value)) << f->traits().name << " n=" << n << " k=" << k;
      ASSERT_NEAR(f->evaluate(bb.set), bb.value, 1e-12);
    }
}

TEST(StaticOracle, TopKIsExactForConcaveOfModular) {
  std::mt19937_64 g(13);
  for (auto fam : {Family::Modular, Family::Sqrt, Family::Log})
    for (int t = 0; t < 500; ++t) {
      const int n = 1 + static_cast<int>(g() % 12);
      const int k = 1 + static_cast<int>(g() % n);
      auto f = random_function(fam, n, g);
      const auto& mc = dynamic_cast<const ModularConcave&>(*f);
      ASSERT_NEAR(solve_topk(mc, k).value, bitmask_opt(*f, k), 1e-12);
    }
}

TEST(StaticOracle, NodeLimitGivesAnInexactResultWithValidBounds) {
  std::mt19937_64 g(14);
  auto f = random_function(Family::FacilityLocation, 14, g);
  BranchAndBoundOptions o;
  o.node_limit = 3;
  const auto s = solve_branch_and_bound(*f, 5, o);
  const double opt = bitmask_opt(*f, 5);
  EXPECT_FALSE(s.exact);
  EXPECT_LE(s.value, opt + 1e-12);
  EXPECT_GE(s.upper, opt - 1e-12);
}

TEST(StaticOracle, BranchAndBoundRefusesNonSubmodularFunctions) {
  Eigen::VectorXd a = Eigen::VectorXd::Ones(3);
  Eigen::MatrixXd v = Eigen::MatrixXd::Identity(3, 3);
  const OutputFidelity f(a, v);
  EXPECT_THROW(solve_branch_and_bound(f, 2), Error);
  // solve_static falls back to brute force, which handles any function.
  EXPECT_EQ(solve_static(f, 2).method, "brute-force");
}

TEST(StaticOracle, SolvesFacilityLocationN80K10) {
  std::mt19937_64 g(15);
  Eigen::MatrixXd s(16, 80);
  std::exponential_distribution<double> E(1.0);
  for (int r = 0; r < 16; ++r)
    for (int j = 0; j < 80; ++j) s(r, j) = E(g);
  const FacilityLocation f(s);
  const auto sol = solve_branch_and_bound(f, 10);
  EXPECT_TRUE(sol.exact);
  GreedyOptions go;
  go.budget = 10;
  const auto gr = lazy_greedy(f, go);
  EXPECT_GE(sol.value, gr.value - 1e-12);
  EXPECT_LE(sol.value, gr.upper_bound + 1e-12);
}
