// The augmentation step and the schedule read-out shared by the assignment solvers.
#include "assignment_steps.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <limits>
#include <utility>

#include "kvo/core/error.hpp"

namespace kvo::detail {

void settle_augmentation(int cur, int sink, double reach, std::span<const int> rows_seen,
                         std::span<const int> cols_seen, std::span<const double> dist, std::span<const int> pred,
                         std::vector<double>& u, std::vector<double>& v, std::vector<int>& col_of,
                         std::vector<int>& row_of) {
  u[static_cast<size_t>(cur)] += reach;
  for (int x : rows_seen)
    if (x != cur) u[static_cast<size_t>(x)] += reach - dist[static_cast<size_t>(col_of[static_cast<size_t>(x)])];
  for (int j : cols_seen) v[static_cast<size_t>(j)] -= reach - dist[static_cast<size_t>(j)];
  for (int j = sink;;) {
    const int x = pred[static_cast<size_t>(j)];
    row_of[static_cast<size_t>(j)] = x;
    std::swap(col_of[static_cast<size_t>(x)], j);
    if (x == cur) break;
  }
}

StepAssignment assign_eviction_steps(std::span<const double> L, std::span<const size_t> offset,
                                     std::span<const int> step_rows) {
  const double inf = std::numeric_limits<double>::infinity();
  const int steps = static_cast<int>(offset.size()) - 1;
  require(static_cast<int>(step_rows.size()) == steps, "offline assignment: one row count per step is needed (a bug)");
  std::vector<int> step_of;  // row -> its eviction step
  for (int s = 0; s < steps; ++s)
    step_of.insert(step_of.end(), static_cast<size_t>(step_rows[static_cast<size_t>(s)]), s);
  const int rows = static_cast<int>(step_of.size());
  auto width = [&](int s) {
    return static_cast<int>(offset[static_cast<size_t>(s) + 1] - offset[static_cast<size_t>(s)]);
  };
  const size_t cols = steps > 0 ? static_cast<size_t>(width(steps - 1)) : 0;
  StepAssignment out;
  std::vector<double>& pot_row = out.row_potential;
  std::vector<int>& col_of = out.col_of;
  pot_row.assign(static_cast<size_t>(rows), 0.0);
  col_of.assign(static_cast<size_t>(rows), -1);
  std::vector<double> pot_col(cols, 0.0);
  std::vector<int> row_of(cols, -1);
  // As in solve_offline: key is an unsettled column's tentative distance (+inf once settled, its
  // penalty making later relaxations no-ops), and block minima find the next column to settle.
  std::vector<double> key(cols), penalty(cols, 0.0), dist(cols);
  std::vector<int> path(cols), rows_seen, cols_seen;
  constexpr int kBlock = 64;
  std::vector<double> block_min(cols / kBlock + 1);
  auto block_minimum = [&](int b, int limit) {
    const int from = b * kBlock, to = std::min(limit, from + kBlock);
    return Eigen::Map<const Eigen::ArrayXd>(key.data() + from, to - from).minCoeff();
  };
  for (int cur = 0; cur < rows; ++cur) {
    const int w_cur = width(step_of[static_cast<size_t>(cur)]);  // earlier rows' columns lie within
    const int blocks = (w_cur + kBlock - 1) / kBlock;
    std::fill(key.begin(), key.begin() + w_cur, inf);
    std::fill(block_min.begin(), block_min.begin() + blocks, inf);
    rows_seen.clear();
    cols_seen.clear();
    double min_val = 0.0;
    int i = cur, sink = -1;
    while (sink < 0) {
      rows_seen.push_back(i);
      const int step = step_of[static_cast<size_t>(i)];
      const double* c = L.data() + offset[static_cast<size_t>(step)];
      const int li = width(step);
      const double base = min_val - pot_row[static_cast<size_t>(i)];
      double* k = key.data();
      const double *vv = pot_col.data(), *pen = penalty.data();
      int* pa = path.data();
      for (int j = 0; j < li; ++j) {
        const double reduced = base + c[j] - vv[j] + pen[j];
        const bool better = reduced < k[j];
        k[j] = better ? reduced : k[j];
        pa[j] = better ? i : pa[j];
      }
      for (int b = 0; b * kBlock < li; ++b) block_min[static_cast<size_t>(b)] = block_minimum(b, w_cur);
      Eigen::Index best_block = 0;
      const double lowest = Eigen::Map<const Eigen::ArrayXd>(block_min.data(), blocks).minCoeff(&best_block);
      require(lowest < inf, "offline assignment: no augmenting path (a bug)");
      const double* from = k + best_block * kBlock;
      const int pick = static_cast<int>(std::find(from, static_cast<const double*>(k) + w_cur, lowest) - k);
      key[static_cast<size_t>(pick)] = inf;
      block_min[static_cast<size_t>(best_block)] = block_minimum(static_cast<int>(best_block), w_cur);
      min_val = lowest;
      dist[static_cast<size_t>(pick)] = lowest;
      penalty[static_cast<size_t>(pick)] = inf;
      cols_seen.push_back(pick);
      if (row_of[static_cast<size_t>(pick)] < 0)
        sink = pick;
      else
        i = row_of[static_cast<size_t>(pick)];
    }
    detail::settle_augmentation(cur, sink, min_val, rows_seen, cols_seen, dist, path, pot_row, pot_col, col_of, row_of);
    for (int j : cols_seen) penalty[static_cast<size_t>(j)] = 0.0;
    ++out.work;
  }
  return out;
}

void schedule_from_assignment(int n, int first, const std::vector<int>& col_of, const std::vector<double>& u,
                              OfflineSolution& sol) {
  const int rows = static_cast<int>(col_of.size());
  sol.end.assign(static_cast<size_t>(n), n - 1);
  for (int x = 0; x < rows; ++x) sol.end[static_cast<size_t>(col_of[static_cast<size_t>(x)])] = first + x - 1;
  sol.price.assign(static_cast<size_t>(n), 0.0);
  for (int x = 0; x < rows; ++x) {
    const double next = x + 1 < rows ? u[static_cast<size_t>(x) + 1] : 0.0;
    sol.price[static_cast<size_t>(first + x)] = std::max(0.0, u[static_cast<size_t>(x)] - next);
  }
}

}  // namespace kvo::detail
