// The default offline solver: the nested problem as a min-cost assignment of eviction steps to
// tokens (docs/oracle.md §3). With w >= 0 a full heavy pool never idles, so from step h + r on
// every step evicts exactly one token that has entered the pool (a_j <= t), and every such choice
// is a nested schedule; evicting token j at step t forgoes L_j(t) = sum_{s >= t} w(s, j). The
// steps are added in time order, each by one shortest augmenting path (Dijkstra on reduced costs
// over the columns of the tokens already arrived), and the step potentials give the dual prices
// of the flow formulation: lambda_t = u_t - u_{t+1}.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "assignment_steps.hpp"
#include "kvo/core/error.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_streaming.hpp"

namespace kvo {

OfflineSolution solve_offline(const OfflineProblem& p) {
  validate(p);
  const int n = p.n(), r = p.recent, h = p.heavy();
  const int m = n - r;                                  // tokens that enter the heavy pool (a_j = j + r <= n - 1)
  const int first = h + r;                              // the first step that evicts
  const int rows = n - first;                           // eviction steps first .. n - 1
  auto len = [&](int i) { return first + i - r + 1; };  // tokens arrived by step first + i
  // L_j(t) for every eviction step t and token j <= t - r, row by row (suffix sums, backwards).
  std::vector<size_t> offset(static_cast<size_t>(rows) + 1, 0);
  for (int i = 0; i < rows; ++i) offset[static_cast<size_t>(i) + 1] = offset[static_cast<size_t>(i)] + len(i);
  std::vector<double> L(offset.back()), suffix(static_cast<size_t>(std::max(m, 0)), 0.0);
  for (int t = n - 1; t >= first; --t) {
    for (int j = 0; j <= t - r; ++j) suffix[static_cast<size_t>(j)] += p.w(t, j);
    std::copy(suffix.begin(), suffix.begin() + (t - r + 1), L.begin() + static_cast<long>(offset[t - first]));
  }

  OfflineSolution sol;
  sol.method = "assignment";
  const detail::StepAssignment assigned =
      detail::assign_eviction_steps(L, offset, std::vector<int>(static_cast<size_t>(rows), 1));
  const std::vector<int>& col_of = assigned.col_of;
  const std::vector<double>& u = assigned.row_potential;
  sol.work = assigned.work;

  detail::schedule_from_assignment(n, first, col_of, u, sol);
  // The value and the certificate summed as every solver sums them (ScheduleEvaluator).
  const ScheduleCheck check = evaluate_schedule(DenseWeightRows(p.w), p.budget, p.recent, sol.end, sol.price);
  sol.value = check.value;
  sol.upper = check.upper;
  return sol;
}

}  // namespace kvo
