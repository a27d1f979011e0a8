// Exact offline optimum of the nested (irreversible-eviction) problem with an additive
// per-step objective (docs/theory.md §3.6; proof in docs/oracle.md):
//   maximise sum_i sum_{j in S_i} w(i, j)  s.t.  S_i ⊆ S_{i-1} ∪ {i},  |S_i| <= k,
// optionally with the last r tokens forced in (heavy capacity h = k - r, the H2O shape).
// Solvers: a min-cost assignment of eviction steps to tokens (the default), min-cost flow by
// successive shortest paths on a graph of n + 1 time nodes, Boost Graph's min-cost flow on the
// full chain network, a DP over cache states and exhaustive enumeration (small n). Every solution
// carries an LP-dual certificate.
#pragma once
#include <Eigen/Dense>
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kvo/core/set_function.hpp"

namespace kvo {

struct OfflineProblem {
  // w(i, j) >= 0 for j <= i: reward of holding token j at step i (entries above the diagonal are
  // ignored). Retained dense attention mass: w = a.
  Eigen::MatrixXd w;
  int budget = 1;  // k: cache size after each step
  int recent = 0;  // r: tokens i-r+1..i are always kept (0: nothing forced, the paper's problem)
  int n() const { return static_cast<int>(w.rows()); }
  int heavy() const { return budget - recent; }
};

struct OfflineSolution {
  double value = 0.0;         // sum_i w(i, S_i): the schedule's value (lower bound on OPT)
  double upper = 0.0;         // dual objective (upper bound on OPT); == value when certified
  std::vector<int> end;       // per token j: last step it is kept (j - 1: never kept)
  std::vector<double> price;  // dual price of a heavy slot at each step (lambda_i >= 0)
  std::string method;
  long long work = 0;  // augmentations, DP states or enumerated schedules
  // Column generation only: restricted solves, passes over the rows, candidate pairs in the last.
  int rounds = 0, passes = 0;
  long long pairs = 0;
  int table_stride = 0;       // the cost table's stride in steps (0: priced on the rows alone)
  long long table_bytes = 0;  // the cost table's size
  // S_i for every step, ascending.
  std::vector<std::vector<int>> schedule() const;
};

// Validates the problem (square w, finite, w >= 0 on and below the diagonal, 0 <= r <= k <= n).
void validate(const OfflineProblem& p);

// The default exact solver on a dense w: eviction steps assigned to tokens in time order by shortest
// augmenting paths (Hungarian), O(n^2/2) doubles of memory, about (n - k)(settled columns) n/2 work.
// Without the matrix, in O(n) memory per candidate: solve_offline_streaming (offline_streaming.hpp).
OfflineSolution solve_offline(const OfflineProblem& p);
// Successive shortest paths for the flow on n + 1 time nodes (h augmentations of O(n^2) each):
// the reference the default is tested against.
OfflineSolution solve_offline_ssp(const OfflineProblem& p);
// Boost Graph Library successive_shortest_path_nonnegative_weights on the chain network
// (n^2/2 nodes): the comparison baseline.
OfflineSolution solve_offline_bgl(const OfflineProblem& p);
// DP over cache states V_i(S) (exact for any per-step objective; exponential: n <= ~25, small k).
// value(i, S) is g_i(S) for the cache S after step i; monotone g needs only maximal caches.
using StepObjective = std::function<double(int step, const std::vector<int>& cache)>;
OfflineSolution solve_offline_dp(int n, int budget, int recent, const StepObjective& g, bool monotone);
// Every schedule (token end times), n <= 12: the test oracle for the others.
OfflineSolution solve_offline_brute(const OfflineProblem& p);
// Every schedule under any per-step objective g_i(S_i) (n <= 10): the DP's test oracle.
OfflineSolution solve_offline_enumerate(int n, int budget, int recent, const StepObjective& g);

// Upper bounds on the offline optimum of monotone submodular per-step objectives at any n, where
// the DP cannot go: the sum of static optima sum_i opt_i (docs/theory.md §2.7, D.27), and the exact flow
// optimum of the modular relaxation g_i(S) <= g_i({}) + sum_{j in S} (g_i({j}) - g_i({})).
// `objective(i)` builds g_i over the ground set {0..i}.
struct OfflineUpperBound {
  double static_sum = 0.0;    // sum_i opt_i (each from the exact static solver's upper bound)
  double modular_flow = 0.0;  // OPT_dyn of the singleton-gain relaxation, plus sum_i g_i({})
  double best() const { return std::min(static_sum, modular_flow); }
};
OfflineUpperBound offline_upper_bound(int n, int budget, int recent,
                                      const std::function<std::unique_ptr<SetFunction>(int step)>& objective);

// The value of a schedule given as kept sets S_i (any policy's), sum_i sum_{j in S_i} w(i, j).
double schedule_value(const OfflineProblem& p, const std::vector<std::vector<int>>& kept);

// For every step i, the sum of the min(k, i + 1) largest w(i, j) over j <= i: the per-step static
// optimum opt_i of an additive objective (row i of a lower-triangular w).
std::vector<double> top_k_row_sums(const Eigen::MatrixXd& w, int k);
// The sum of the min(k, size) largest entries of one row (the summation order top_k_row_sums and
// the streaming checks share); reorders `row`.
double top_k_sum(std::vector<double>& row, int k);

// Independent optimality certificate: checks that `end` is feasible, that (price, mu) with
// mu_j = max(0, max_e R_j(e) - sum price) is dual feasible, and returns the dual objective.
// kvo::Error when the schedule is infeasible or a price is negative.
double dual_bound(const OfflineProblem& p, const std::vector<int>& end, const std::vector<double>& price);

}  // namespace kvo
