// Periodic compression as a min-cost assignment (docs/allocation.md, "Periodic compression"). The
// compression after step c must leave H T tokens, so by then H max(0, c + 1 - T) tokens have been
// evicted in all (evicting earlier or more never gains: w >= 0, and a token evicted later forgoes
// less). The compressions that evict are the assignment's steps, each with as many rows as it
// evicts; its columns are the tokens (of every unit) at least r old, ordered by arrival then unit,
// and evicting unit u's token j after step c forgoes L_uj(c) = sum_{s > c} w_u(s, j). Rows of one
// compression are interchangeable, so they share one potential U_c, and the price of a slot after
// compression c is lambda_c = U_c - U_c' (c' the next one that evicts, U = 0 after the last).
#include "kvo/oracle/offline_periodic.hpp"

#include <algorithm>
#include <string>

#include "assignment_steps.hpp"
#include "kvo/core/error.hpp"

namespace kvo {

std::vector<int> periodic_compression_steps(int n, const PeriodicSchedule& schedule) {
  require(schedule.interval >= 1,
          "compression interval " + std::to_string(schedule.interval) + " must be at least 1 step");
  require(schedule.prompt_len >= 0 && schedule.prompt_len < n,
          "prompt length " + std::to_string(schedule.prompt_len) + " must be in [0, " + std::to_string(n - 1) + "]");
  std::vector<int> out;
  for (long long c = static_cast<long long>(schedule.prompt_len) + schedule.interval - 1; c < n - 1;
       c += schedule.interval)
    out.push_back(static_cast<int>(c));
  return out;
}

namespace {

void validate_compression_steps(int n, std::span<const int> points) {
  for (size_t x = 0; x < points.size(); ++x) {
    require(points[x] >= 0 && points[x] < n - 1,
            "compression step " + std::to_string(points[x]) + " must be in [0, " + std::to_string(n - 2) + "]");
    require(x == 0 || points[x] > points[x - 1], "compression steps must be strictly increasing");
  }
}

}  // namespace

ScheduleCheck evaluate_periodic_schedule(std::span<const OfflineProblem> units, const PeriodicSchedule& schedule,
                                         const std::vector<std::vector<int>>& end, const std::vector<double>& price,
                                         std::vector<double>* unit_values) {
  validate_shared_units(units);
  return evaluate_compression_schedule(units, periodic_compression_steps(units[0].n(), schedule), end, price,
                                       unit_values);
}

ScheduleCheck evaluate_compression_schedule(std::span<const OfflineProblem> units, std::span<const int> points,
                                            const std::vector<std::vector<int>>& end, const std::vector<double>& price,
                                            std::vector<double>* unit_values) {
  validate_shared_units(units);
  const int H = static_cast<int>(units.size()), n = units[0].n(), r = units[0].recent;
  const int capacity = H * units[0].heavy();
  validate_compression_steps(n, points);
  std::vector<char> is_point(static_cast<size_t>(n), 0);
  for (int c : points) is_point[static_cast<size_t>(c)] = 1;
  require(end.size() == units.size(), "certificate: one schedule per unit is needed");
  require(static_cast<int>(price.size()) == n, "certificate: one price per step is needed");
  for (double p : price) require(p >= 0.0, "certificate: prices must be nonnegative");
  // Tokens older than the window held after each compression: j is counted after c in [j + r, end).
  std::vector<int> change(static_cast<size_t>(n) + 1, 0);
  for (size_t u = 0; u < end.size(); ++u) {
    require(static_cast<int>(end[u].size()) == n, "certificate: a unit's schedule has the wrong length");
    for (int j = 0; j < n; ++j) {
      const int e = end[u][static_cast<size_t>(j)];
      require(e == n - 1 || (e >= 0 && e < n && is_point[static_cast<size_t>(e)] && e >= j + r),
              "certificate: unit " + std::to_string(u) + "'s token " + std::to_string(j) + " ends at step " +
                  std::to_string(e) + ", not at a compression it may be evicted by");
      if (j + r < e) {
        ++change[static_cast<size_t>(j + r)];
        --change[static_cast<size_t>(e)];
      }
    }
  }
  for (int c = 0, held = 0; c < n; ++c) {
    held += change[static_cast<size_t>(c)];
    require(!is_point[static_cast<size_t>(c)] || held <= capacity,
            "certificate: the compression after step " + std::to_string(c) + " leaves more than the target");
  }
  // Each token's value, and its best end under the prices (the Lagrangian relaxation of the
  // capacity after every compression: surviving the compression after c costs lambda_c).
  ScheduleCheck check;
  for (size_t u = 0; u < units.size(); ++u) {
    const Eigen::MatrixXd& w = units[u].w;
    double value = 0.0;
    for (int j = 0; j < n; ++j) {
      const int e = end[u][static_cast<size_t>(j)];
      double held = 0.0, penalty = 0.0, best = 0.0;
      for (int s = j; s < n; ++s) {
        held += w(s, j);
        if (s == e) value += held;
        if (is_point[static_cast<size_t>(s)] && s >= j + r) {
          best = std::max(best, held - penalty);
          penalty += price[static_cast<size_t>(s)];
        }
      }
      check.upper += std::max(best, held - penalty);
    }
    check.value += value;
    if (unit_values) unit_values->push_back(value);
  }
  for (int c : points) check.upper += capacity * price[static_cast<size_t>(c)];
  return check;
}

SharedOfflineSolution solve_offline_periodic(std::span<const OfflineProblem> units, const PeriodicSchedule& schedule) {
  validate_shared_units(units);
  return solve_offline_compressions(units, periodic_compression_steps(units[0].n(), schedule));
}

SharedOfflineSolution solve_offline_compressions(std::span<const OfflineProblem> units, std::span<const int> points) {
  validate_shared_units(units);
  const int H = static_cast<int>(units.size()), n = units[0].n(), T = units[0].budget, r = units[0].recent;
  validate_compression_steps(n, points);
  // The compressions that evict, and how many tokens each evicts (the cumulative count is forced).
  std::vector<int> steps, rows;
  long long evicted = 0;
  for (int c : points) {
    const long long due = static_cast<long long>(H) * std::max(0, c + 1 - T);
    if (due == evicted) continue;
    steps.push_back(c);
    rows.push_back(static_cast<int>(due - evicted));
    evicted = due;
  }
  auto width = [&](int c) { return static_cast<size_t>(H) * static_cast<size_t>(c - r + 1); };
  std::vector<size_t> offset(steps.size() + 1, 0);
  for (size_t s = 0; s < steps.size(); ++s) offset[s + 1] = offset[s] + width(steps[s]);
  std::vector<double> L(offset.back());
  // L_s(j) = sum over t > steps[s] of w(t, j), summed from t = n - 1 down, one column at a time
  // (w is column-major); column j enters the compressions s with j <= steps[s] - r.
  for (int u = 0; u < H; ++u) {
    const Eigen::MatrixXd& w = units[static_cast<size_t>(u)].w;
    for (int j = 0; !steps.empty() && j <= steps.back() - r; ++j) {
      const double* col = w.col(j).data();
      double suffix = 0.0;
      int t = n - 1;
      for (size_t s = steps.size(); s-- > 0 && j <= steps[s] - r;) {
        for (; t > steps[s]; --t) suffix += col[t];
        L[offset[s] + static_cast<size_t>(j) * static_cast<size_t>(H) + static_cast<size_t>(u)] = suffix;
      }
    }
  }

  SharedOfflineSolution sol;
  const detail::StepAssignment assigned = detail::assign_eviction_steps(L, offset, rows);
  sol.work = assigned.work;
  sol.end.assign(static_cast<size_t>(H), std::vector<int>(static_cast<size_t>(n), n - 1));
  sol.price.assign(static_cast<size_t>(n), 0.0);
  size_t row = 0;
  std::vector<double> potential(steps.size() + 1, 0.0);  // U per compression, 0 after the last
  for (size_t s = 0; s < steps.size(); ++s) {
    potential[s] = assigned.row_potential[row];
    for (int x = 0; x < rows[s]; ++x, ++row) {
      const int c = assigned.col_of[row];
      sol.end[static_cast<size_t>(c % H)][static_cast<size_t>(c / H)] = steps[s];
    }
  }
  for (size_t s = 0; s < steps.size(); ++s)
    sol.price[static_cast<size_t>(steps[s])] = std::max(0.0, potential[s] - potential[s + 1]);
  const ScheduleCheck check = evaluate_compression_schedule(units, points, sol.end, sol.price, &sol.unit_value);
  sol.value = check.value;
  sol.upper = check.upper;
  return sol;
}

}  // namespace kvo
