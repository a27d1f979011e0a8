// The exact prefill optimum of one budget scope when every unit brings its own budget to its
// sharing group: the shared-budget rows (every unit bringing k) and the allocating presses'
// references (every unit bringing what the press gave it) both solve it.
#pragma once
#include <span>
#include <vector>

#include "kvo/oracle/allocation.hpp"

namespace kvo {

struct ScopeOptimum {
  double value = 0.0, upper = 0.0;  // summed over the scope's groups; upper: their Lagrangian bounds
  std::vector<int> slots;           // per unit, layer-major
};

// gains[u]: unit u's sorted gains (its weights or page weights, heaviest first), layer-major with
// kv_heads units per layer. A group shares the sum of its units' budgets; the layerwise scope
// shares the sum of one head's budget per layer (every head of a layer must bring the same).
// floor: the least a unit (layerwise: a layer's heads) keeps; the head scope keeps its budget.
ScopeOptimum solve_scope_optimum(BudgetScope scope, const std::vector<std::vector<double>>& gains, size_t kv_heads,
                                 std::span<const int> budgets, int floor);

}  // namespace kvo
