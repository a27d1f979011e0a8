// Seeded random instances of the offline (nested-eviction) problem for the oracle tests.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <random>

#include "kvo/oracle/offline_oracle.hpp"

namespace kvo::test {

// Lower-triangular weights (exponential, a sixth of them 0; or integers 0..2 full of ties), a
// random budget 1..n and window 0..budget.
inline OfflineProblem random_offline_problem(std::mt19937_64& g, int n, bool ties) {
  std::exponential_distribution<double> E(1.0);
  OfflineProblem p;
  p.w = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) p.w(i, j) = ties ? static_cast<double>(g() % 3) : (g() % 6 == 0 ? 0.0 : E(g));
  p.budget = 1 + static_cast<int>(g() % static_cast<std::uint64_t>(n));
  p.recent = static_cast<int>(g() % static_cast<std::uint64_t>(p.budget + 1));
  return p;
}

}  // namespace kvo::test
