// The exact offline optimum of irreversible eviction when H cache units (the KV heads of a layer,
// or every unit of a model) share one capacity: each step, every unit's token arrives and the
// units together hold at most H k tokens, each unit keeping its own last r (docs/allocation.md,
// "Decoding"). It generalises solve_offline's assignment: once the shared heavy pool is full, each
// step evicts exactly H tokens, from any units, and every such choice is a nested schedule.
#pragma once
#include <span>
#include <vector>

#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_streaming.hpp"

namespace kvo {

struct SharedOfflineSolution {
  double value = 0.0;                 // sum over units and steps of the kept tokens' w
  double upper = 0.0;                 // the shared flow's LP dual at `price`: equals value when certified
  std::vector<std::vector<int>> end;  // [unit][token]: the last step it is kept (j - 1: never)
  std::vector<double> price;          // per step: the dual price of one slot of the shared pool
  std::vector<double> unit_value;     // [unit]: its part of the value
  long long work = 0;                 // augmentations
};

// kvo::Error unless there is a unit, each is valid and all have the same n, budget and window.
void validate_shared_units(std::span<const OfflineProblem> units);

// Every unit's problem must have the same n, budget k and recent window r (kvo::Error naming the
// unit otherwise, or when there is none); the shared heavy capacity is H (k - r). Dense: the
// suffix sums of every unit's w by eviction step, O(H n^2 / 2) doubles of memory.
SharedOfflineSolution solve_offline_shared(std::span<const OfflineProblem> units);

// The value and the dual bound of any shared schedule under nonnegative prices, in one pass per
// unit (kvo::Error when a unit's ends leave its window or the units together hold more than
// H (k - r) heavy tokens at some step); each unit's part of the value in `unit_values` if given.
ScheduleCheck evaluate_shared_schedule(std::span<const OfflineProblem> units, const std::vector<std::vector<int>>& end,
                                       const std::vector<double>& price, std::vector<double>* unit_values = nullptr);
// The same over rows produced on demand (one pass per unit, rows on `threads` threads).
ScheduleCheck evaluate_shared_schedule(std::span<const WeightRows* const> units, int budget, int recent,
                                       const std::vector<std::vector<int>>& end, const std::vector<double>& price,
                                       int threads = 1, std::vector<double>* unit_values = nullptr);

// The optimum of solve_offline_shared (same problem, same certificate) without the matrices: column
// generation over the units' rows produced on demand (the per-head solve_offline_streaming's
// method, with H interchangeable rows per eviction step), in O(H n (d + candidates)) memory. Every
// unit must have the same n; kvo::Error for sizes outside 0 <= r <= k <= n.
SharedOfflineSolution solve_offline_shared_streaming(std::span<const WeightRows* const> units, int budget, int recent,
                                                     const StreamingOfflineOptions& options = {});
// The same on dense units (checked as solve_offline_shared checks them), their rows read from w.
SharedOfflineSolution solve_offline_shared_streaming(std::span<const OfflineProblem> units,
                                                     const StreamingOfflineOptions& options = {});

}  // namespace kvo
