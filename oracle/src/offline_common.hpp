// Internal: the heavy-pool view of a offline problem shared by the solvers. Token j enters the
// heavy pool at step a_j = j + r (straight from the forced window) and earns Rh_j[x] for holding
// it through steps a_j .. a_j + x - 1; the window's own reward is a constant.
#pragma once
#include <vector>

#include "kvo/oracle/offline_oracle.hpp"

namespace kvo::detail {

struct HeavyView {
  int n = 0, h = 0, r = 0;
  double window = 0.0;                    // sum of w over the forced windows
  std::vector<int> arrival;               // a_j (>= n: never in the heavy pool)
  std::vector<std::vector<double>> gain;  // Rh_j[x], x = 0 .. n - a_j
  explicit HeavyView(const OfflineProblem& p);
  // Overall last kept step of token j from its heavy end index x.
  int end_of(int j, int x) const { return x == 0 ? std::min(arrival[j] - 1, n - 1) : arrival[j] + x - 1; }
};

}  // namespace kvo::detail
