#include "scope_optimum.hpp"

#include <algorithm>

#include "kvo/core/error.hpp"
#include "kvo/oracle/budget_allocation.hpp"

namespace kvo {
namespace {

void add_allocation(ScopeOptimum& out, std::span<const AllocationGroup> groups, long total) {
  const BudgetAllocation a = allocate_budget(groups, total);
  out.value += a.value;
  out.upper += a.upper;
  out.slots.insert(out.slots.end(), a.slots.begin(), a.slots.end());
}

}  // namespace

ScopeOptimum solve_scope_optimum(BudgetScope scope, const std::vector<std::vector<double>>& gains, size_t kv_heads,
                                 std::span<const int> budgets, int floor) {
  require(budgets.size() == gains.size(), "scope optimum: one budget per unit");
  ScopeOptimum out;
  const size_t layers = gains.size() / kv_heads;
  if (scope == BudgetScope::Layerwise) {
    // One group per layer: a slot more in each of its KV heads gains the sum of their next weights.
    std::vector<AllocationGroup> groups(layers);
    long total = 0;
    for (size_t l = 0; l < layers; ++l) {
      groups[l].floor = floor;
      groups[l].gains.assign(gains[l * kv_heads].size(), 0.0);
      for (size_t h = 0; h < kv_heads; ++h) {
        require(budgets[l * kv_heads + h] == budgets[l * kv_heads],
                "layerwise scope: a layer's heads differ in budget");
        for (size_t m = 0; m < groups[l].gains.size(); ++m) groups[l].gains[m] += gains[l * kv_heads + h][m];
      }
      total += budgets[l * kv_heads];
    }
    add_allocation(out, groups, total);
    std::vector<int> per_layer = std::move(out.slots);
    out.slots.clear();
    for (int s : per_layer) out.slots.insert(out.slots.end(), kv_heads, s);
    return out;
  }
  for (const std::vector<size_t>& members : sharing_units(scope, layers, kv_heads)) {
    std::vector<AllocationGroup> groups;
    long total = 0;
    for (size_t u : members) {
      groups.push_back({gains[u], scope == BudgetScope::Head ? budgets[u] : floor});
      total += budgets[u];
    }
    add_allocation(out, groups, total);
  }
  return out;
}

}  // namespace kvo
