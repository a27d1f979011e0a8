#include "kvo/oracle/budget_allocation.hpp"

#include <algorithm>
#include <string>
#include <tuple>

#include "kvo/core/error.hpp"

namespace kvo {
namespace {

void validate(std::span<const AllocationGroup> groups, long total) {
  require(total >= 0, "budget allocation: the total budget is negative (" + std::to_string(total) + ")");
  long floors = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const AllocationGroup& group = groups[g];
    const std::string at = "budget allocation: group " + std::to_string(g);
    require(
        group.floor >= 0 && static_cast<size_t>(group.floor) <= group.gains.size(),
        at + ": floor " + std::to_string(group.floor) + " is outside [0, " + std::to_string(group.gains.size()) + "]");
    for (size_t m = 0; m < group.gains.size(); ++m) {
      require(group.gains[m] >= 0, at + ": gain " + std::to_string(m) + " is negative");
      require(m == 0 || group.gains[m] <= group.gains[m - 1],
              at + ": gains increase at slot " + std::to_string(m) + " (the value must be concave)");
    }
    floors += group.floor;
  }
  require(floors <= total, "budget allocation: the floors sum to " + std::to_string(floors) +
                               " slots, more than the total budget " + std::to_string(total));
}

}  // namespace

double allocation_dual_bound(std::span<const AllocationGroup> groups, long total, double lambda) {
  double bound = 0.0;
  long floors = 0;
  for (const AllocationGroup& group : groups) {
    for (size_t m = 0; m < group.gains.size(); ++m)
      bound += m < static_cast<size_t>(group.floor) ? group.gains[m] : std::max(0.0, group.gains[m] - lambda);
    floors += group.floor;
  }
  return bound + lambda * static_cast<double>(total - floors);
}

BudgetAllocation allocate_budget(std::span<const AllocationGroup> groups, long total) {
  validate(groups, total);
  BudgetAllocation a;
  a.slots.resize(groups.size());
  long left = total;
  // (gain, group, slot) beyond the floors; the gains fall within a group, so taking the largest
  // first (lower group, then earlier slot, on ties) takes a prefix of each group.
  std::vector<std::tuple<double, int, int>> beyond;
  for (size_t g = 0; g < groups.size(); ++g) {
    const AllocationGroup& group = groups[g];
    a.slots[g] = group.floor;
    left -= group.floor;
    for (int m = 0; m < group.floor; ++m) a.value += group.gains[static_cast<size_t>(m)];
    for (size_t m = static_cast<size_t>(group.floor); m < group.gains.size(); ++m)
      beyond.emplace_back(group.gains[m], static_cast<int>(g), static_cast<int>(m));
  }
  const size_t take = std::min(beyond.size(), static_cast<size_t>(left));
  std::partial_sort(beyond.begin(), beyond.begin() + static_cast<std::ptrdiff_t>(take), beyond.end(),
                    [](const auto& x, const auto& y) {
                      if (std::get<0>(x) != std::get<0>(y)) return std::get<0>(x) > std::get<0>(y);
                      return std::tie(std::get<1>(x), std::get<2>(x)) < std::tie(std::get<1>(y), std::get<2>(y));
                    });
  for (size_t x = 0; x < take; ++x) {
    const auto& [gain, g, m] = beyond[x];
    ++a.slots[static_cast<size_t>(g)];
    a.value += gain;
  }
  // The price: the last gain taken when the budget binds, the largest gain left when nothing
  // beyond the floors is taken, and 0 when every slot is taken (the budget does not bind).
  if (take == beyond.size())
    a.lambda = 0.0;
  else if (take > 0)
    a.lambda = std::get<0>(beyond[take - 1]);
  else
    a.lambda = std::get<0>(*std::max_element(beyond.begin(), beyond.end()));
  a.upper = allocation_dual_bound(groups, total, a.lambda);
  return a;
}

}  // namespace kvo
