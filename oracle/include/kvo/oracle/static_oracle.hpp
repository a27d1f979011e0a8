// Exact static optimum max_{S ⊆ ground, |S| <= k} f(S): top-k for h(modular) objectives, brute
// force for small ground sets, and branch and bound (Nemhauser-Wolsey bound, lazy evaluation,
// seeded by lazy greedy) for monotone submodular f. Every result is a value plus its set, and a
// lower/upper bound pair that coincide when the solve finished.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kvo/core/modular_concave.hpp"
#include "kvo/core/set_function.hpp"

namespace kvo {

struct StaticSolution {
  std::vector<int> set;  // ascending
  double value = 0.0;    // f(set) = lower bound
  double upper = 0.0;    // proven upper bound on OPT (== value when exact)
  bool exact = false;
  std::string method;
  long long nodes = 0;        // branch-and-bound nodes or enumerated sets
  long long evaluations = 0;  // gain evaluations
};

// Exact for h(sum w) with w >= 0 and h non-decreasing: the k largest weights (ties: smaller index).
StaticSolution solve_topk(const ModularConcave& f, int k);

// Enumerates every set with |S| <= k (|S| == min(k, n) when f is monotone). n <= 25.
StaticSolution solve_brute_force(const SetFunction& f, int k);

struct BranchAndBoundOptions {
  long long node_limit = 50'000'000;  // stop (inexact, with bounds) after this many nodes
  double tolerance = 1e-12;           // relative: prune when bound <= incumbent * (1 + tol)
};
// Requires a monotone submodular f (kvo::Error otherwise).
StaticSolution solve_branch_and_bound(const SetFunction& f, int k, const BranchAndBoundOptions& opt = {});

// Chooses: top-k for ModularConcave, brute force for n <= 16 or non-submodular f, else B&B.
StaticSolution solve_static(const SetFunction& f, int k, const BranchAndBoundOptions& opt = {});

}  // namespace kvo
