// The augmentation step and the schedule read-out shared by the assignment solvers.
#include "assignment_steps.hpp"

#include <algorithm>
#include <utility>

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
