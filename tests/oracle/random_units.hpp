// Oracle test helper: seeded random per-unit offline problems with ties and zeros, for the
// shared-capacity and periodic solvers' tests.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "kvo/oracle/offline_oracle.hpp"

namespace kvo::test {

// `units` problems of n steps, budget (or target) k and window r; about a quarter of w are zeros.
inline std::vector<OfflineProblem> random_units(int units, int n, int k, int r, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> draw(1.0);
  std::vector<OfflineProblem> out(static_cast<size_t>(units));
  for (OfflineProblem& p : out) {
    p.w = Eigen::MatrixXd::Zero(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j) p.w(i, j) = (rng() % 4 == 0) ? 0.0 : draw(rng);
    p.budget = k;
    p.recent = r;
  }
  return out;
}

}  // namespace kvo::test
