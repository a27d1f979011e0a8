// The augmentation step and the schedule read-out shared by the assignment solvers.
#include "assignment_steps.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <limits>
#include <utility>

#include "kvo/core/error.hpp"

namespace kvo::detail {

namespace {

// After Dijkstra from step `source` settled the unmatched column `sink` at distance `reach`: every
// step reached grows its potential by how much shorter its path was (the source's by `reach`),
// each settled column's falls by the same; then the path is flipped into the matching. A step is
// entered through one column, whose row (entry_row) moves to the column the step relaxed next on
// the path; the source's new row `cur` takes the first.
void settle_augmentation(int cur, int source, int sink, double reach, std::span<const int> steps_seen,
                         std::span<const double> step_dist, std::span<const int> entry_row,
                         std::span<const int> cols_seen, std::span<const double> dist, std::span<const int> pred,
                         std::vector<double>& u, std::vector<double>& v, std::vector<int>& col_of,
                         std::vector<int>& row_of) {
  for (int t : steps_seen) u[static_cast<size_t>(t)] += reach - step_dist[static_cast<size_t>(t)];
  for (int j : cols_seen) v[static_cast<size_t>(j)] -= reach - dist[static_cast<size_t>(j)];
  for (int j = sink;;) {
    const int t = pred[static_cast<size_t>(j)];
    const int x = t == source ? cur : entry_row[static_cast<size_t>(t)];
    row_of[static_cast<size_t>(j)] = x;
    std::swap(col_of[static_cast<size_t>(x)], j);
    if (x == cur) break;
  }
}

}  // namespace

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
  // The rows of a step have the same costs, so they are one node of the Dijkstra with one
  // potential (a transportation problem): each step is scanned at most once per augmentation,
  // however many of its rows the paths pass through. With one row per step this is the
  // row-by-row Hungarian of solve_offline, operation for operation.
  std::vector<double> pot_step(static_cast<size_t>(steps), 0.0);
  std::vector<int>& col_of = out.col_of;
  col_of.assign(static_cast<size_t>(rows), -1);
  std::vector<double> pot_col(cols, 0.0);
  std::vector<int> row_of(cols, -1);
  // As in solve_offline: key is an unsettled column's tentative distance (+inf once settled, its
  // penalty making later relaxations no-ops), and block minima find the next column to settle;
  // path holds the step whose scan set the key.
  std::vector<double> key(cols), penalty(cols, 0.0), dist(cols);
  std::vector<int> path(cols), cols_seen, steps_seen;
  std::vector<double> step_dist(static_cast<size_t>(steps));
  std::vector<int> entry_row(static_cast<size_t>(steps));
  std::vector<char> step_seen(static_cast<size_t>(steps), 0);
  // Two levels of minima, over blocks of 64 keys and over groups of 64 blocks, so that finding
  // the next column costs O(64 + 64 + cols / 4096) and not O(cols / 64): a Dijkstra may settle
  // thousands of columns. Ties go to the lowest column at every level.
  constexpr int kBlock = 64, kGroup = 64;
  std::vector<double> block_min(cols / kBlock + 1), group_min(cols / (kBlock * kGroup) + 1);
  auto block_minimum = [&](int b, int limit) {
    const int from = b * kBlock, to = std::min(limit, from + kBlock);
    return Eigen::Map<const Eigen::ArrayXd>(key.data() + from, to - from).minCoeff();
  };
  auto group_minimum = [&](int g, int blocks) {
    const int from = g * kGroup, to = std::min(blocks, from + kGroup);
    return Eigen::Map<const Eigen::ArrayXd>(block_min.data() + from, to - from).minCoeff();
  };
  auto first_of = [](const double* from, const double* to, double value) {
    return static_cast<int>(std::find(from, to, value) - from);
  };
  for (int cur = 0; cur < rows; ++cur) {
    const int source = step_of[static_cast<size_t>(cur)];
    const int w_cur = width(source);  // earlier steps' columns lie within
    const int blocks = (w_cur + kBlock - 1) / kBlock, groups = (blocks + kGroup - 1) / kGroup;
    std::fill(key.begin(), key.begin() + w_cur, inf);
    std::fill(block_min.begin(), block_min.begin() + blocks, inf);
    std::fill(group_min.begin(), group_min.begin() + groups, inf);
    for (int t : steps_seen) step_seen[static_cast<size_t>(t)] = 0;
    steps_seen.clear();
    cols_seen.clear();
    double min_val = 0.0;
    int step = source, sink = -1;
    step_dist[static_cast<size_t>(source)] = 0.0;
    while (sink < 0) {
      step_seen[static_cast<size_t>(step)] = 1;
      steps_seen.push_back(step);
      const double* c = L.data() + offset[static_cast<size_t>(step)];
      const int li = width(step);
      const double base = min_val - pot_step[static_cast<size_t>(step)];
      double* k = key.data();
      const double *vv = pot_col.data(), *pen = penalty.data();
      int* pa = path.data();
      for (int j = 0; j < li; ++j) {
        const double reduced = base + c[j] - vv[j] + pen[j];
        const bool better = reduced < k[j];
        k[j] = better ? reduced : k[j];
        pa[j] = better ? step : pa[j];
      }
      const int scanned = (li + kBlock - 1) / kBlock;
      for (int b = 0; b < scanned; ++b) block_min[static_cast<size_t>(b)] = block_minimum(b, w_cur);
      for (int g = 0; g * kGroup < scanned; ++g) group_min[static_cast<size_t>(g)] = group_minimum(g, blocks);
      for (;;) {  // settle columns until one is free (the sink) or leads to a step not yet scanned
        Eigen::Index best_group = 0;
        const double lowest = Eigen::Map<const Eigen::ArrayXd>(group_min.data(), groups).minCoeff(&best_group);
        if (!(lowest < inf)) throw Error("offline assignment: no augmenting path (a bug)");  // no string per settle
        const int g = static_cast<int>(best_group), first_block = g * kGroup;
        const int b = first_block + first_of(block_min.data() + first_block,
                                             block_min.data() + std::min(blocks, first_block + kGroup), lowest);
        const int pick = b * kBlock + first_of(k + b * kBlock, k + w_cur, lowest);
        key[static_cast<size_t>(pick)] = inf;
        block_min[static_cast<size_t>(b)] = block_minimum(b, w_cur);
        group_min[static_cast<size_t>(g)] = group_minimum(g, blocks);
        min_val = lowest;
        dist[static_cast<size_t>(pick)] = lowest;
        penalty[static_cast<size_t>(pick)] = inf;
        cols_seen.push_back(pick);
        const int x = row_of[static_cast<size_t>(pick)];
        if (x < 0) {
          sink = pick;
          break;
        }
        if (const int t = step_of[static_cast<size_t>(x)]; !step_seen[static_cast<size_t>(t)]) {
          step = t;
          step_dist[static_cast<size_t>(t)] = lowest;
          entry_row[static_cast<size_t>(t)] = x;
          break;
        }
      }
    }
    settle_augmentation(cur, source, sink, min_val, steps_seen, step_dist, entry_row, cols_seen, dist, path, pot_step,
                        pot_col, col_of, row_of);
    for (int j : cols_seen) penalty[static_cast<size_t>(j)] = 0.0;
    ++out.work;
  }
  out.row_potential.resize(static_cast<size_t>(rows));
  for (int x = 0; x < rows; ++x)
    out.row_potential[static_cast<size_t>(x)] = pot_step[static_cast<size_t>(step_of[static_cast<size_t>(x)])];
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
