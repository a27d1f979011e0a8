// The exact offline optimum of an admission-only cache (a write gate): a token is never evicted
// once admitted; it is admitted, or dropped for good, when it leaves the window of the last r
// tokens (at its arrival when r = 0). H units may share one capacity of H (k - r) admitted
// tokens. The optimum is a top-(H (k - r)) of each candidate's mass after its window, certified by
// the dual of that one capacity (docs/engines.md, "Admission-only caches").
#pragma once
#include <span>
#include <vector>

#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_streaming.hpp"

namespace kvo {

struct AdmissionSolution {
  double value = 0.0;                 // sum over units and steps of the kept tokens' w
  double upper = 0.0;                 // the dual bound at `price`: equals value when certified
  std::vector<std::vector<int>> end;  // [unit][token]: n - 1 when admitted, else its window's last step
  double price = 0.0;                 // the dual price of one admitted slot
  std::vector<double> unit_value;     // [unit]: its part of the value
  long long admitted = 0;             // tokens admitted over all units
};

// What admitting token j of a unit gains: its w after the window, sum_{i >= j + r} w(i, j); 0 for
// the last r tokens, which are never candidates.
std::vector<double> admission_gains(const OfflineProblem& unit);

// Every unit must have the same n, budget and window (validate_shared_units). Ties: among equal
// gains the older token is admitted first, then the earlier unit.
AdmissionSolution solve_offline_admission(std::span<const OfflineProblem> units);

// The value and the dual bound of any admission-only schedule under a price >= 0: kvo::Error when a
// token's end is neither n - 1 nor its window's last step (j + r - 1), or when more than H (k - r)
// tokens are admitted; each unit's part of the value in `unit_values` if given.
ScheduleCheck evaluate_admission_schedule(std::span<const OfflineProblem> units,
                                          const std::vector<std::vector<int>>& end, double price,
                                          std::vector<double>* unit_values = nullptr);

}  // namespace kvo
