// Column generation's parts, each alone (oracle/src/column_generation.hpp): the restricted
// assignment against brute force, from scratch and warm; the cost table's stride and bounds; the
// pricer's lists, its screen, its certificate and its greedy seed. The whole solver is held to the
// dense optimum by offline_streaming_test.cpp.
#include "column_generation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

using namespace kvo::detail;

namespace {

// The cheapest way to give each of steps x per rows a distinct column from its step's list.
double brute_force(const std::vector<std::vector<Candidate>>& lists, int per) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> used;
  std::function<void(size_t, double)> go = [&](size_t row, double sum) {
    if (row == lists.size() * static_cast<size_t>(per)) {
      best = std::min(best, sum);
      return;
    }
    for (const Candidate& c : lists[row / static_cast<size_t>(per)])
      if (std::find(used.begin(), used.end(), c.token) == used.end()) {
        used.push_back(c.token);
        go(row + 1, sum + c.cost);
        used.pop_back();
      }
  };
  go(0, 0.0);
  return best;
}

std::vector<std::vector<Candidate>> random_lists(int steps, int cols, std::mt19937_64& g) {
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  std::vector<std::vector<Candidate>> lists(static_cast<size_t>(steps));
  for (auto& list : lists)
    for (int c = 0; c < cols; ++c) list.push_back({c, std::round(cost(g) * 8) / 8});  // exact sums
  return lists;
}

// Dual feasibility on every listed pair, and tightness on every matched one.
void expect_certified(const RestrictedAssignment& ra, const std::vector<std::vector<Candidate>>& lists, int per) {
  const auto& u = ra.row_potentials();
  const auto& col_of = ra.matching();
  for (size_t row = 0; row < col_of.size(); ++row)
    for (const Candidate& c : lists[row / static_cast<size_t>(per)]) {
      const double reduced = c.cost - u[row] - ra.v(c.token);
      EXPECT_GE(reduced, -1e-12) << "row " << row << " column " << c.token;
      if (c.token == col_of[row]) {
        EXPECT_NEAR(reduced, 0.0, 1e-12);
      }
    }
}

}  // namespace

TEST(RestrictedAssignment, SolvesToTheBruteForceOptimumWithACertificate) {
  std::mt19937_64 g(7);
  for (int per : {1, 2})
    for (int trial = 0; trial < 20; ++trial) {
      const int steps = 3, cols = 3 * per + 1;
      const auto lists = random_lists(steps, cols, g);
      RestrictedAssignment ra(steps, cols, per);
      for (int s = 0; s < steps; ++s)
        for (const Candidate& c : lists[static_cast<size_t>(s)]) ra.add(s, c);
      ra.solve();
      EXPECT_DOUBLE_EQ(ra.value(), brute_force(lists, per)) << "per " << per << " trial " << trial;
      expect_certified(ra, lists, per);
    }
}

TEST(RestrictedAssignment, WarmResolveAfterNewPairsEqualsAScratchSolve) {
  std::mt19937_64 g(11);
  for (int trial = 0; trial < 20; ++trial) {
    const int steps = 4, cols = 6, per = 1;
    const auto lists = random_lists(steps, cols, g);
    RestrictedAssignment ra(steps, cols, per);
    for (int s = 0; s < steps; ++s)  // a feasible start: each step its own column
      ra.add(s, lists[static_cast<size_t>(s)][static_cast<size_t>(s)]);
    ra.solve();
    for (int s = 0; s < steps; ++s)
      for (const Candidate& c : lists[static_cast<size_t>(s)])
        if (c.token != s) ra.add(s, c);
    ra.resolve(0.9, 0.0, false);
    EXPECT_DOUBLE_EQ(ra.value(), brute_force(lists, per)) << "trial " << trial;
    expect_certified(ra, lists, per);
  }
}

TEST(CostTable, ChoosesTheSmallestStrideThatFits) {
  const auto arrived = [](int step) { return static_cast<size_t>(step + 1) * 2; };
  const int steps = 20;
  const CostTable all(steps, arrived, 0, 1e12);
  EXPECT_EQ(all.stride(), 1);
  EXPECT_EQ(all.bytes(), static_cast<long long>(sizeof(float) * 2 * (20 * 21 / 2)));
  for (int want : {2, 3, 5, 8, 16}) {
    const double cap = CostTable::floats(steps, arrived, want) * sizeof(float);
    const CostTable t(steps, arrived, 0, cap);
    ASSERT_FALSE(t.empty());
    EXPECT_LE(static_cast<double>(t.bytes()), cap);
    EXPECT_GT(CostTable::floats(steps, arrived, t.stride() > 8 ? t.stride() / 2 : t.stride() - 1) * sizeof(float), cap)
        << "a smaller stride would have fit";
  }
  EXPECT_TRUE(CostTable(steps, arrived, 0, 4.0).empty());  // not even one row fits
  EXPECT_TRUE(CostTable(steps, arrived, 0, 0.0).empty());
  EXPECT_TRUE(CostTable(0, arrived, 0, 1e12).empty());
  EXPECT_EQ(CostTable(steps, arrived, 6, 1e12).stride(), 6);  // a given stride is kept
}

TEST(CostTable, EachStepReadsTheRowOfItsCheckpoint) {
  const auto arrived = [](int step) { return static_cast<size_t>(step + 1); };
  CostTable t(10, arrived, 4, 1e12);  // rows of steps 3, 7 and 9
  for (int step = 0; step < 10; ++step) {
    const int kept = t.checkpoint(step);
    EXPECT_EQ(kept, step < 4 ? 3 : step < 8 ? 7 : 9);
    EXPECT_EQ(t.row(step), t.row(kept));
  }
  // A row holds every column arrived by its checkpoint, and rows do not overlap.
  EXPECT_EQ(t.row(4) - t.row(0), 4);
  EXPECT_EQ(t.row(8) - t.row(4), 8);
  EXPECT_EQ(t.bytes(), static_cast<long long>(sizeof(float) * (4 + 8 + 10)));
}

TEST(ColumnPricer, ListsTheMostNegativePairsThenEachColumnsBest) {
  RestrictedAssignment ra(1, 5, 1);
  ra.add(0, {0, 5.0});
  ra.solve();  // u = 5 on the one row: every other column prices at cost - 5
  ColumnPricer pricer(5, 2);
  const std::vector<double> cost = {5.0, 1.0, 3.0, 0.5, 4.0};
  const auto [added, negative] = pricer.price_step(
      ra, 0, 5, [&](size_t x) { return cost[x]; }, 0.0, [](size_t, size_t, double, double) { return true; });
  EXPECT_EQ(added, 2);
  EXPECT_EQ(negative, 4);
  std::vector<int> listed;
  for (const Candidate& c : ra.list(0)) listed.push_back(c.token);
  EXPECT_EQ(listed, (std::vector<int>{0, 3, 1}));  // the two most negative joined
  EXPECT_EQ(pricer.add_column_bests(ra), 2);       // then columns 2 and 4 through their bests
  EXPECT_EQ(pricer.add_column_bests(ra), 0);       // the bests are forgotten once added
  ra.resolve(0.9, 0.0, false);
  EXPECT_DOUBLE_EQ(ra.value(), 0.5);
  const auto again = pricer.price_step(
      ra, 0, 5, [&](size_t x) { return cost[x]; }, 0.0, [](size_t, size_t, double, double) { return true; });
  EXPECT_EQ(again.first + again.second, 0);  // optimal: nothing prices below zero
}

// The float screen may let through blocks without a negative pair, never skip one with.
TEST(ColumnPricer, TheTableScreenNeverSkipsANegativePair) {
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const size_t cols = 4 * ColumnPricer::kScreen;
  for (int trial = 0; trial < 200; ++trial) {
    RestrictedAssignment ra(1, static_cast<int>(cols), 1);
    std::vector<float> L(cols);
    for (size_t x = 0; x < cols; ++x) L[x] = static_cast<float>(1.0 + 100.0 * unit(g));
    ra.add(0, {static_cast<int>(trial % cols), static_cast<double>(L[static_cast<size_t>(trial) % cols])});
    ra.solve();
    ColumnPricer pricer(cols, 8);
    pricer.set_tolerance(1e-14);
    pricer.refresh_screen(ra);
    const double ut = ra.step_potential(0);
    for (size_t from = 0; from < cols; from += ColumnPricer::kScreen) {
      bool negative = false;
      for (size_t x = from; x < from + ColumnPricer::kScreen; ++x)
        negative |= static_cast<double>(L[x]) - ut - ra.v(static_cast<int>(x)) < -1e-14;
      if (negative) {
        EXPECT_TRUE(pricer.screen_table(L.data(), from, from + ColumnPricer::kScreen, ut,
                                        std::numeric_limits<double>::infinity(), false));
      }
    }
  }
}

TEST(ColumnPricer, TheTableCertifiesOnlyFeasiblePotentials) {
  const auto arrived = [](int step) { return static_cast<size_t>(step + 2); };
  CostTable table(2, arrived, 1, 1e12);
  const std::vector<std::vector<float>> rows = {{3.0f, 1.0f}, {3.0f, 1.0f, 2.0f}};
  for (int s = 0; s < 2; ++s) std::copy(rows[s].begin(), rows[s].end(), table.row(s));
  RestrictedAssignment ra(2, 3, 1);
  ra.add(0, {1, 1.0});
  ra.add(1, {1, 1.0});
  ra.add(1, {2, 2.0});
  ra.solve();  // the unlisted pairs (column 0 at both steps, cost 3) price at >= 0
  ColumnPricer pricer(3, 4);
  EXPECT_TRUE(pricer.table_certifies(ra, table, 2, arrived));
  RestrictedAssignment cheaper(2, 3, 1);
  cheaper.add(0, {0, 3.0});
  cheaper.add(1, {2, 2.0});
  cheaper.solve();  // u_0 = 3, v = 0: column 1 at step 0 prices at 1 - 3 < 0 and is not listed
  EXPECT_FALSE(pricer.table_certifies(cheaper, table, 2, arrived));
}

TEST(ColumnPricer, TheGreedySeedIsAFeasibleAssignment) {
  std::mt19937_64 g(5);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int steps = 12, per = 2;
  const auto arrived = [&](int step) { return static_cast<size_t>(step + 3) * per; };
  const size_t cols = arrived(steps - 1);
  CostTable table(steps, arrived, 1, 1e12);
  for (int s = 0; s < steps; ++s)
    for (size_t x = 0; x < arrived(s); ++x) table.row(s)[x] = static_cast<float>(unit(g));
  RestrictedAssignment ra(steps, static_cast<int>(cols), per);
  ColumnPricer pricer(cols, 3 * per);
  const long long added = pricer.seed_greedy_schedule(ra, table, steps, arrived, per);
  EXPECT_GE(added, steps * per);
  ra.solve();  // every row finds a column: the greedy schedule's evictions are listed
  std::vector<int> taken = ra.matching();
  EXPECT_TRUE(std::none_of(taken.begin(), taken.end(), [](int c) { return c < 0; }));
  std::sort(taken.begin(), taken.end());
  EXPECT_EQ(std::adjacent_find(taken.begin(), taken.end()), taken.end()) << "a column evicted twice";
}
