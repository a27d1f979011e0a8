// Internal: the dense shortest-augmenting-path assignment of eviction steps to tokens (docs/oracle.md
// §3b) that solve_offline, solve_offline_shared and the periodic solver share, and how its matching
// and row potentials become a schedule and its dual prices.
#pragma once
#include <span>
#include <vector>

#include "kvo/oracle/offline_oracle.hpp"

namespace kvo::detail {

// The min-cost assignment of eviction rows to tokens by shortest augmenting paths, rows added in
// time order (docs/oracle.md §3b). Eviction step s has step_rows[s] rows with the same costs:
// L[offset[s] + c] for the columns c < offset[s + 1] - offset[s] arrived by then (a prefix that
// grows with s). Returns each row's column (rows numbered step by step) and the row potentials.
struct StepAssignment {
  std::vector<int> col_of;
  std::vector<double> row_potential;
  long long work = 0;  // augmentations
};
StepAssignment assign_eviction_steps(std::span<const double> L, std::span<const size_t> offset,
                                     std::span<const int> step_rows);

// Row x is eviction step first + x: its token keeps the heavy slot through first + x - 1 and every
// unmatched token stays to n - 1; lambda_t = max(0, u_t - u_{t+1}) on the eviction steps (u_n = 0),
// 0 before the pool is full. Sets sol.end and sol.price.
void schedule_from_assignment(int n, int first, const std::vector<int>& col_of, const std::vector<double>& u,
                              OfflineSolution& sol);

}  // namespace kvo::detail
