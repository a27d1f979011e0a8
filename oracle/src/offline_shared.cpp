// The shared-capacity offline optimum as a min-cost assignment (docs/allocation.md, "Decoding"):
// from step first = h + r on, the H tokens arriving each step overfill the shared heavy pool of
// H h slots by H, so each step evicts exactly H tokens that have entered it (w >= 0: a full pool
// never idles), and evicting unit u's token j at step t forgoes L_uj(t) = sum_{s >= t} w_u(s, j).
// Rows are (step, slot) pairs, H per step with the same costs; columns are tokens ordered by
// arrival then unit, so each row sees a prefix of them and rows are added in time order by
// shortest augmenting paths exactly as in solve_offline. Rows of one step are interchangeable and
// all matched, so complementary slackness gives them one potential U_t, and the shared slot's
// price is lambda_t = U_t - U_{t+1}.
#include "kvo/oracle/offline_shared.hpp"

#include <algorithm>
#include <string>

#include "assignment_steps.hpp"
#include "column_generation.hpp"
#include "kvo/core/error.hpp"
#include "kvo/oracle/offline_streaming.hpp"
#include "kvo/oracle/weight_rows.hpp"

namespace kvo {

void validate_shared_units(std::span<const OfflineProblem> units) {
  require(!units.empty(), "shared offline problem: no unit");
  for (size_t u = 0; u < units.size(); ++u) {
    validate(units[u]);
    require(units[u].n() == units[0].n() && units[u].budget == units[0].budget && units[u].recent == units[0].recent,
            "shared offline problem: unit " + std::to_string(u) +
                " differs from unit 0 in n, budget or recent window (units share one schedule of steps)");
  }
}

namespace {

// Validated dense units as row sources (the matrices must outlive it). Not copyable: sources
// point into rows.
struct DenseUnits {
  DenseUnits(const DenseUnits&) = delete;
  DenseUnits& operator=(const DenseUnits&) = delete;
  explicit DenseUnits(std::span<const OfflineProblem> units) {
    validate_shared_units(units);
    rows.reserve(units.size());
    for (const OfflineProblem& u : units) sources.push_back(&rows.emplace_back(u.w));
  }
  std::vector<DenseWeightRows> rows;
  std::vector<const WeightRows*> sources;
};

}  // namespace

ScheduleCheck evaluate_shared_schedule(std::span<const OfflineProblem> units, const std::vector<std::vector<int>>& end,
                                       const std::vector<double>& price, std::vector<double>* unit_values) {
  const DenseUnits dense(units);
  return evaluate_shared_schedule(dense.sources, units[0].budget, units[0].recent, end, price, 1, unit_values);
}

SharedOfflineSolution solve_offline_shared_streaming(std::span<const OfflineProblem> units,
                                                     const StreamingOfflineOptions& options) {
  const DenseUnits dense(units);
  return solve_offline_shared_streaming(dense.sources, units[0].budget, units[0].recent, options);
}

ScheduleCheck evaluate_shared_schedule(std::span<const WeightRows* const> units, int budget, int recent,
                                       const std::vector<std::vector<int>>& end, const std::vector<double>& price,
                                       int threads, std::vector<double>* unit_values) {
  require(!units.empty(), "shared offline problem: no unit");
  require(end.size() == units.size(), "certificate: one schedule per unit is needed");
  const int n = units[0]->n(), k = budget, r = recent;
  const int capacity = static_cast<int>(units.size()) * (k - r);
  // The shared capacity: heavy tokens of every unit alive at each step.
  std::vector<int> change(static_cast<size_t>(n) + 1, 0);
  for (const std::vector<int>& e : end) {
    require(static_cast<int>(e.size()) == n, "certificate: a unit's schedule has the wrong length");
    for (int j = 0; j < n; ++j)
      if (j + r <= e[static_cast<size_t>(j)] && e[static_cast<size_t>(j)] < n) {
        ++change[static_cast<size_t>(j + r)];
        --change[static_cast<size_t>(e[static_cast<size_t>(j)]) + 1];
      }
  }
  for (int i = 0, heavy = 0; i < n; ++i) {
    heavy += change[static_cast<size_t>(i)];
    require(heavy <= capacity, "certificate: step " + std::to_string(i) + " holds more than the shared heavy budget");
  }
  // Per unit: its value and its tokens' part of the dual (each unit checked against the shared
  // capacity, the sum above); the prices' part counts the shared capacity once.
  ScheduleCheck check;
  for (size_t u = 0; u < units.size(); ++u) {
    ScheduleEvaluator ev(n, k, r, end[u], price, capacity);
    for_each_row(*units[u], 0, n, false, threads, [&](int i, std::span<const double> row) { ev.add(i, row); });
    check.value += ev.value();
    check.upper += ev.token_dual();
    if (unit_values) unit_values->push_back(ev.value());
  }
  for (double p : price) check.upper += capacity * p;
  return check;
}

namespace {

// Read-out of an assignment with H rows per eviction step (step-major) and columns j H + u: a
// token matched to a row of step t is kept through t - 1, the others stay to n - 1; the step's
// slot price is lambda_t = max(0, U_t - U_{t+1}) from its first row's potential (U after the last
// step: 0).
void shared_schedule_from_assignment(int n, int first, int H, const std::vector<int>& col_of,
                                     const std::vector<double>& pot_row, SharedOfflineSolution& sol) {
  const int rows = static_cast<int>(col_of.size()), steps = rows / H;
  sol.end.assign(static_cast<size_t>(H), std::vector<int>(static_cast<size_t>(n), n - 1));
  for (int x = 0; x < rows; ++x) {
    const int c = col_of[static_cast<size_t>(x)];
    sol.end[static_cast<size_t>(c % H)][static_cast<size_t>(c / H)] = first + x / H - 1;
  }
  sol.price.assign(static_cast<size_t>(n), 0.0);
  for (int s = 0; s < steps; ++s) {
    const double next = s + 1 < steps ? pot_row[static_cast<size_t>((s + 1) * H)] : 0.0;
    sol.price[static_cast<size_t>(first + s)] = std::max(0.0, pot_row[static_cast<size_t>(s * H)] - next);
  }
}

}  // namespace

SharedOfflineSolution solve_offline_shared(std::span<const OfflineProblem> units) {
  validate_shared_units(units);
  const int H = static_cast<int>(units.size());
  const int n = units[0].n(), r = units[0].recent, h = units[0].heavy();
  const int m = n - r;      // tokens per unit that enter the heavy pool
  const int first = h + r;  // the first step that evicts
  const int steps = std::max(0, n - first);
  auto width = [&](int t) { return H * (t - r + 1); };  // tokens (of every unit) arrived by step t
  // L per eviction step over the columns arrived by then (suffix sums, backwards in time).
  std::vector<size_t> offset(static_cast<size_t>(steps) + 1, 0);
  for (int s = 0; s < steps; ++s)
    offset[static_cast<size_t>(s) + 1] = offset[static_cast<size_t>(s)] + width(first + s);
  const size_t cols = static_cast<size_t>(std::max(m, 0)) * static_cast<size_t>(H);
  std::vector<double> L(offset.back()), suffix(cols, 0.0);
  for (int t = n - 1; t >= first; --t) {
    for (int j = 0; j <= t - r; ++j)
      for (int u = 0; u < H; ++u) suffix[static_cast<size_t>(j * H + u)] += units[static_cast<size_t>(u)].w(t, j);
    std::copy(suffix.begin(), suffix.begin() + width(t), L.begin() + static_cast<long>(offset[t - first]));
  }

  SharedOfflineSolution sol;
  const detail::StepAssignment assigned =
      detail::assign_eviction_steps(L, offset, std::vector<int>(static_cast<size_t>(steps), H));
  const std::vector<int>& col_of = assigned.col_of;
  const std::vector<double>& pot_row = assigned.row_potential;
  sol.work = assigned.work;

  shared_schedule_from_assignment(n, first, H, col_of, pot_row, sol);
  const ScheduleCheck check = evaluate_shared_schedule(units, sol.end, sol.price, &sol.unit_value);
  sol.value = check.value;
  sol.upper = check.upper;
  return sol;
}

SharedOfflineSolution solve_offline_shared_streaming(std::span<const WeightRows* const> units, int budget, int recent,
                                                     const StreamingOfflineOptions& options) {
  require(!units.empty(), "shared offline problem: no unit");
  const int n = units[0]->n(), H = static_cast<int>(units.size());
  validate_offline_sizes(n, budget, recent);
  for (size_t u = 1; u < units.size(); ++u)
    require(units[u]->n() == n, "shared offline problem: unit " + std::to_string(u) +
                                    " differs from unit 0 in n (units share one schedule of steps)");
  require(options.candidates >= 1, "offline column generation: need at least one candidate per step");
  const detail::ColumnGeneration cg = detail::column_generation(units, budget, recent, options);
  SharedOfflineSolution sol;
  sol.work = cg.work;
  shared_schedule_from_assignment(n, budget, H, cg.col_of, cg.row_potential, sol);
  const ScheduleCheck check =
      evaluate_shared_schedule(units, budget, recent, sol.end, sol.price, options.threads, &sol.unit_value);
  sol.value = check.value;
  sol.upper = check.upper;
  return sol;
}

}  // namespace kvo
