// Admission-only caches: the gains, the top-(H (k - r)) choice and its one-price certificate. The
// LP max sum_j g_j x_j s.t. sum_j x_j <= C, 0 <= x <= 1 has the dual min C lambda + sum_j mu_j
// with mu_j >= g_j - lambda, mu, lambda >= 0; at lambda = the largest gain left out (0 when none
// is), the dual equals the top-C sum.
#include "kvo/oracle/offline_admission.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "kvo/core/error.hpp"
#include "kvo/oracle/offline_shared.hpp"

namespace kvo {
namespace {

// The last step token j is held when it is not admitted: the end of its window.
int dropped_end(int j, int r, int n) { return std::min(j + r - 1, n - 1); }

}  // namespace

std::vector<double> admission_gains(const OfflineProblem& unit) {
  const int n = unit.n(), r = unit.recent;
  std::vector<double> gain(static_cast<size_t>(n), 0.0);
  for (int j = 0; j + r < n; ++j)
    for (int i = j + r; i < n; ++i) gain[static_cast<size_t>(j)] += unit.w(i, j);
  return gain;
}

AdmissionSolution solve_offline_admission(std::span<const OfflineProblem> units) {
  validate_shared_units(units);
  const int H = static_cast<int>(units.size()), n = units[0].n(), r = units[0].recent;
  const long long capacity = static_cast<long long>(H) * units[0].heavy();
  struct Candidate {
    double gain;
    int token, unit;
  };
  std::vector<Candidate> candidates;
  for (int u = 0; u < H; ++u) {
    const std::vector<double> gain = admission_gains(units[static_cast<size_t>(u)]);
    for (int j = 0; j + r < n; ++j) candidates.push_back({gain[static_cast<size_t>(j)], j, u});
  }
  // Highest gain first; ties: the older token, then the earlier unit.
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.gain != b.gain) return a.gain > b.gain;
    return a.token != b.token ? a.token < b.token : a.unit < b.unit;
  });
  AdmissionSolution sol;
  sol.end.assign(static_cast<size_t>(H), std::vector<int>(static_cast<size_t>(n)));
  for (int u = 0; u < H; ++u)
    for (int j = 0; j < n; ++j) sol.end[static_cast<size_t>(u)][static_cast<size_t>(j)] = dropped_end(j, r, n);
  const long long take = std::min<long long>(capacity, static_cast<long long>(candidates.size()));
  for (long long x = 0; x < take; ++x) {
    const Candidate& c = candidates[static_cast<size_t>(x)];
    if (c.gain <= 0.0) break;  // admitting nothing of value changes nothing; the slot stays free
    sol.end[static_cast<size_t>(c.unit)][static_cast<size_t>(c.token)] = n - 1;
    ++sol.admitted;
  }
  sol.price = take < static_cast<long long>(candidates.size()) ? candidates[static_cast<size_t>(take)].gain : 0.0;
  const ScheduleCheck check = evaluate_admission_schedule(units, sol.end, sol.price, &sol.unit_value);
  sol.value = check.value;
  sol.upper = check.upper;
  return sol;
}

ScheduleCheck evaluate_admission_schedule(std::span<const OfflineProblem> units,
                                          const std::vector<std::vector<int>>& end, double price,
                                          std::vector<double>* unit_values) {
  validate_shared_units(units);
  const int n = units[0].n(), r = units[0].recent;
  const long long capacity = static_cast<long long>(units.size()) * units[0].heavy();
  require(end.size() == units.size(), "certificate: one schedule per unit is needed");
  require(price >= 0.0, "certificate: the price must be nonnegative");
  ScheduleCheck check;
  long long admitted = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    require(static_cast<int>(end[u].size()) == n, "certificate: a unit's schedule has the wrong length");
    const OfflineProblem& p = units[u];
    const std::vector<double> gain = admission_gains(p);
    double value = 0.0;
    for (int j = 0; j < n; ++j) {
      const int e = end[u][static_cast<size_t>(j)], drop = dropped_end(j, r, n);
      require(e == drop || e == n - 1, "certificate: unit " + std::to_string(u) + "'s token " + std::to_string(j) +
                                           " ends at step " + std::to_string(e) +
                                           ", neither its window's end nor the last step");
      double window = 0.0;
      for (int i = j; i <= drop; ++i) window += p.w(i, j);
      const bool admits = e == n - 1 && drop < n - 1;
      admitted += admits;
      value += window + (admits ? gain[static_cast<size_t>(j)] : 0.0);
      check.upper += window + std::max(0.0, gain[static_cast<size_t>(j)] - price);
    }
    check.value += value;
    if (unit_values) unit_values->push_back(value);
  }
  require(admitted <= capacity, "certificate: " + std::to_string(admitted) + " tokens admitted, more than the " +
                                    std::to_string(capacity) + " slots");
  check.upper += static_cast<double>(capacity) * price;
  return check;
}

}  // namespace kvo
