// The exact offline optimum of periodic compression (kvpress's DecodingPress schedule): the cache
// grows by one token per unit and step, and after the query of every interval-th decoding step it
// is compressed, irreversibly, to `target` tokens per unit (alone, or H units sharing H target
// slots), each unit keeping its own last r. docs/allocation.md, "Periodic compression".
#pragma once
#include <span>
#include <vector>

#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_shared.hpp"

namespace kvo {

struct PeriodicSchedule {
  int prompt_len = 0;  // P: steps 0..P-1 are the prompt's; decoding steps are P, P + 1, ...
  int interval = 1;    // N: compress after the query of step P + m N - 1, m = 1, 2, ...
};

// The steps after whose query the cache is compressed (those before n - 1: a compression after
// the last query changes nothing). kvo::Error for N < 1 or P outside [0, n).
std::vector<int> periodic_compression_steps(int n, const PeriodicSchedule& schedule);

// Every unit's problem must have the same n, target (OfflineProblem::budget: tokens a unit keeps
// after each compression) and window r (OfflineProblem::recent). A token evicted by the
// compression after step c has end c. Certified by the Lagrangian dual of the capacity after each
// compression (price[c]). Dense: O(H n^2 / (2 N)) doubles besides the units.
SharedOfflineSolution solve_offline_periodic(std::span<const OfflineProblem> units, const PeriodicSchedule& schedule);

// The same for compressions after any steps (strictly increasing, each in [0, n - 2]; kvo::Error
// otherwise): a prompt compressed chunk by chunk, then decoding steps (EvictionContract).
SharedOfflineSolution solve_offline_compressions(std::span<const OfflineProblem> units, std::span<const int> points);

// The value and the dual bound of any periodic schedule under nonnegative prices: kvo::Error when
// a token's end is neither n - 1 nor a compression step at least r after its arrival, or when the
// units hold more than H (target - r) tokens older than the window after some compression.
ScheduleCheck evaluate_periodic_schedule(std::span<const OfflineProblem> units, const PeriodicSchedule& schedule,
                                         const std::vector<std::vector<int>>& end, const std::vector<double>& price,
                                         std::vector<double>* unit_values = nullptr);
ScheduleCheck evaluate_compression_schedule(std::span<const OfflineProblem> units, std::span<const int> points,
                                            const std::vector<std::vector<int>>& end, const std::vector<double>& price,
                                            std::vector<double>* unit_values = nullptr);

}  // namespace kvo
