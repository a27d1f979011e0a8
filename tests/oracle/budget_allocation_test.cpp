// The shared-budget allocation (oracle/budget_allocation.hpp): equal to enumerating every
// allocation on small random concave groups, its dual bound tight and valid at every price, and
// each malformed input refused.
#include "kvo/oracle/budget_allocation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "kvo/core/error.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

// Random non-increasing gains (with ties: values drawn from a few levels), sizes 0..5.
std::vector<AllocationGroup> random_groups(std::mt19937_64& rng, int count) {
  std::vector<AllocationGroup> groups(static_cast<size_t>(count));
  for (AllocationGroup& g : groups) {
    const int size = static_cast<int>(rng() % 6);
    for (int m = 0; m < size; ++m) g.gains.push_back(static_cast<double>(rng() % 5) / 4.0);
    std::sort(g.gains.rbegin(), g.gains.rend());
    g.floor = size == 0 ? 0 : static_cast<int>(rng() % 2);
  }
  return groups;
}

// The best value over every allocation within the floors, the sizes and the total.
double enumerate_best(const std::vector<AllocationGroup>& groups, long total) {
  double best = -1;
  std::vector<int> slots(groups.size());
  std::function<void(size_t, long, double)> go = [&](size_t g, long left, double value) {
    if (g == groups.size()) {
      best = std::max(best, value);
      return;
    }
    double v = value;
    for (int m = 0; m <= static_cast<int>(groups[g].gains.size()) && m <= left; ++m) {
      if (m > 0) v += groups[g].gains[static_cast<size_t>(m - 1)];
      if (m >= groups[g].floor) go(g + 1, left - m, v);
    }
  };
  go(0, total, 0.0);
  return best;
}

}  // namespace

TEST(BudgetAllocation, EqualsEnumerationWithATightCertificate) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const std::vector<AllocationGroup> groups = random_groups(rng, 1 + static_cast<int>(rng() % 4));
    long size = 0, floors = 0;
    for (const auto& g : groups) {
      size += static_cast<long>(g.gains.size());
      floors += g.floor;
    }
    const long total = floors + static_cast<long>(rng() % static_cast<unsigned>(size - floors + 2));
    SCOPED_TRACE("trial " + std::to_string(trial) + ", total " + std::to_string(total));
    const BudgetAllocation a = allocate_budget(groups, total);
    EXPECT_NEAR(a.value, enumerate_best(groups, total), 1e-12);
    EXPECT_NEAR(a.upper, a.value, 1e-12);
    long used = 0;
    double value = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      EXPECT_GE(a.slots[g], groups[g].floor);
      EXPECT_LE(a.slots[g], static_cast<int>(groups[g].gains.size()));
      used += a.slots[g];
      for (int m = 0; m < a.slots[g]; ++m) value += groups[g].gains[static_cast<size_t>(m)];
    }
    EXPECT_EQ(used, std::min(total, size));
    EXPECT_NEAR(value, a.value, 1e-12);
    // Weak duality: the bound holds at any price.
    for (double lambda : {0.0, 0.3, 1.0, 2.0}) EXPECT_GE(allocation_dual_bound(groups, total, lambda), a.value - 1e-12);
  }
}

TEST(BudgetAllocation, TiesGoToTheLowerGroupFirst) {
  const std::vector<AllocationGroup> groups = {{{1.0, 0.5}, 0}, {{1.0, 0.5}, 0}};
  EXPECT_EQ(allocate_budget(groups, 1).slots, (std::vector<int>{1, 0}));
  EXPECT_EQ(allocate_budget(groups, 3).slots, (std::vector<int>{2, 1}));
}

TEST(BudgetAllocation, FloorsAreHeldEvenAgainstLargerGains) {
  const std::vector<AllocationGroup> groups = {{{9.0, 8.0, 7.0}, 0}, {{0.1, 0.0}, 1}};
  const BudgetAllocation a = allocate_budget(groups, 3);
  EXPECT_EQ(a.slots, (std::vector<int>{2, 1}));
  EXPECT_DOUBLE_EQ(a.value, 17.1);
  EXPECT_DOUBLE_EQ(a.upper, 17.1);
}

TEST(BudgetAllocation, RefusesMalformedInput) {
  const auto refuses = [](const std::vector<AllocationGroup>& groups, long total, const std::string& part) {
    test::expect_refusal([&] { allocate_budget(groups, total); }, part);
  };
  refuses({{{1.0}, 0}}, -1, "negative");
  refuses({{{1.0, 0.5}, 2}, {{1.0}, 1}}, 2, "floors sum to 3");
  refuses({{{1.0}, 2}}, 5, "floor 2 is outside");
  refuses({{{0.5, 1.0}, 0}}, 1, "gains increase");
  refuses({{{-0.5}, 0}}, 1, "negative");
}
