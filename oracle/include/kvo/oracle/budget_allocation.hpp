// One budget shared by groups whose value is concave in the slots each gets: the exact allocation
// with per-group floors, and the Lagrangian bound that certifies it. Shared KV budgets (heads of a
// layer, layers of a model) reduce to this with each group's gains its sorted key weights.
#pragma once
#include <span>
#include <vector>

namespace kvo {

struct AllocationGroup {
  // gains[m]: the value the (m + 1)-th slot adds; non-negative and non-increasing (concave value).
  std::vector<double> gains;
  int floor = 0;  // slots the group gets whatever the gains; at most gains.size()
};

struct BudgetAllocation {
  std::vector<int> slots;  // per group, in [floor, gains.size()]; they sum to min(total, sum of sizes)
  double value = 0.0;      // sum over groups of their first `slots` gains
  // The Lagrangian dual bound at price lambda (every choice of slots within the floors and the
  // total is worth at most this): sum_g sum_{m < floor_g} gains_g[m] + lambda * (total - sum_g floor_g)
  // + sum_g sum_{m >= floor_g} max(0, gains_g[m] - lambda). It equals `value` at the price below.
  double upper = 0.0;
  double lambda = 0.0;  // the price of a slot: the smallest gain taken beyond the floors (0 if none)
};

// The allocation of `total` slots maximising the summed value: every group's floor, then the
// largest remaining gains. Ties: equal gains go to the lower group index first. kvo::Error for a
// negative total, floors that sum past it, a floor above its group's size, or gains that are
// negative or increase.
BudgetAllocation allocate_budget(std::span<const AllocationGroup> groups, long total);

// The dual bound of the comment above at any price lambda >= 0 (allocate_budget's certificate).
double allocation_dual_bound(std::span<const AllocationGroup> groups, long total, double lambda);

}  // namespace kvo
