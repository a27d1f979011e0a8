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

  const double inf = std::numeric_limits<double>::infinity();
  const size_t cols = static_cast<size_t>(std::max(m, 0));
  std::vector<double> u(static_cast<size_t>(rows), 0.0), v(cols, 0.0);
  std::vector<int> row_of(cols, -1), col_of(static_cast<size_t>(rows), -1);
  // key: the tentative distance of an unsettled column, +inf once settled (its penalty makes every
  // later relaxation a no-op, so both loops below run branch-free); dist: the settled distance.
  std::vector<double> key(cols), penalty(cols, 0.0), dist(cols);
  std::vector<int> path(cols);
  std::vector<int> rows_seen, cols_seen;
  // The minimum of each block of kBlock keys, so the next column to settle is found by a pass
  // over the blocks and one block, not over every key.
  constexpr int kBlock = 64;
  std::vector<double> block_min(cols / kBlock + 1);
  auto block_minimum = [&](int b, int width) {
    const int from = b * kBlock, to = std::min(width, from + kBlock);
    return Eigen::Map<const Eigen::ArrayXd>(key.data() + from, to - from).minCoeff();
  };
  OfflineSolution sol;
  sol.method = "assignment";
  for (int cur = 0; cur < rows; ++cur) {
    const int width = len(cur);  // every row already matched is an earlier step: its columns lie within
    const int blocks = (width + kBlock - 1) / kBlock;
    std::fill(key.begin(), key.begin() + width, inf);
    std::fill(block_min.begin(), block_min.begin() + blocks, inf);
    rows_seen.clear();
    cols_seen.clear();
    double min_val = 0.0;
    int i = cur, sink = -1;
    while (sink < 0) {
      rows_seen.push_back(i);
      const double* c = L.data() + offset[static_cast<size_t>(i)];
      const int li = len(i);
      const double base = min_val - u[static_cast<size_t>(i)];
      double* k = key.data();
      const double *vv = v.data(), *pen = penalty.data();
      int* pa = path.data();
      for (int j = 0; j < li; ++j) {
        const double reduced = base + c[j] - vv[j] + pen[j];
        const bool better = reduced < k[j];
        k[j] = better ? reduced : k[j];
        pa[j] = better ? i : pa[j];
      }
      for (int b = 0; b * kBlock < li; ++b) block_min[static_cast<size_t>(b)] = block_minimum(b, width);
      const auto bm = Eigen::Map<const Eigen::ArrayXd>(block_min.data(), blocks);
      Eigen::Index best_block = 0;
      const double lowest = bm.minCoeff(&best_block);
      require(lowest < inf, "offline assignment: no augmenting path (a bug)");
      const double* from = k + best_block * kBlock;
      const int pick = static_cast<int>(std::find(from, static_cast<const double*>(k) + width, lowest) - k);
      key[static_cast<size_t>(pick)] = inf;
      block_min[static_cast<size_t>(best_block)] = block_minimum(static_cast<int>(best_block), width);
      min_val = lowest;
      dist[static_cast<size_t>(pick)] = lowest;
      penalty[static_cast<size_t>(pick)] = inf;
      cols_seen.push_back(pick);
      if (row_of[static_cast<size_t>(pick)] < 0)
        sink = pick;
      else
        i = row_of[static_cast<size_t>(pick)];
    }
    detail::settle_augmentation(cur, sink, min_val, rows_seen, cols_seen, dist, path, u, v, col_of, row_of);
    for (int j : cols_seen) penalty[static_cast<size_t>(j)] = 0.0;
    ++sol.work;
  }

  detail::schedule_from_assignment(n, first, col_of, u, sol);
  // The value and the certificate summed as every solver sums them (ScheduleEvaluator).
  const ScheduleCheck check = evaluate_schedule(DenseWeightRows(p.w), p.budget, p.recent, sol.end, sol.price);
  sol.value = check.value;
  sol.upper = check.upper;
  return sol;
}

}  // namespace kvo
