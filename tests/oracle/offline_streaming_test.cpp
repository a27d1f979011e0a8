// The offline oracle without the n x n matrix: column generation equals the dense assignment
// solver and enumeration, its certificate closes, rows recomputed from q and k are the dense
// attention's bits, and the one-pass evaluator equals dual_bound and schedule_value.
#include "kvo/oracle/offline_streaming.hpp"

#include <gtest/gtest.h>

#include <random>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "offline_problems.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

using test::random_offline_problem;

OfflineSolution streaming(const OfflineProblem& p, int candidates, int threads = 1, bool table = true,
                          int keep = StreamingOfflineOptions{}.keep, bool schedule_seed = true) {
  StreamingOfflineOptions o;
  o.candidates = candidates;
  o.threads = threads;
  o.keep = keep;
  o.schedule_seed = schedule_seed;
  if (!table) o.table_bytes = 0;
  return solve_offline_streaming(DenseWeightRows(p.w), p.budget, p.recent, o);
}

}  // namespace

TEST(StreamingOracle, EqualsEnumerationOnSmallProblems) {
  std::mt19937_64 g(81);
  for (int t = 0; t < 1000; ++t) {
    const OfflineProblem p = random_offline_problem(g, 1 + static_cast<int>(g() % 10), t % 3 == 0);
    const OfflineSolution s = streaming(p, 1 + t % 3), brute = solve_offline_brute(p);
    const double tol = 1e-9 * std::max(1.0, brute.value);
    ASSERT_NEAR(s.value, brute.value, tol) << "n=" << p.n() << " k=" << p.budget << " r=" << p.recent;
    ASSERT_NEAR(s.upper, s.value, tol);
    ASSERT_NEAR(schedule_value(p, s.schedule()), s.value, tol);
    ASSERT_NEAR(dual_bound(p, s.end, s.price), s.upper, tol);
  }
}

// One candidate per step forces many rounds; 16 few. Both reach the dense solver's optimum, pricing
// on the cost table or on recomputed rows, each round re-solved from the last (warm) or from scratch,
// with every pair kept or lists pruned to 2 pairs (the pruned runs end with fewer pairs somewhere),
// the table's lists seeded from the greedy schedule or by the cheapest pairs alone.
TEST(StreamingOracle, EqualsTheDenseAssignmentSolver) {
  std::mt19937_64 g(82);
  int rounds_seen = 0, table_retries = 0, pruned_smaller = 0;
  for (int t = 0; t < 300; ++t) {
    const OfflineProblem p = random_offline_problem(g, 1 + static_cast<int>(g() % 80), t % 4 == 0);
    const OfflineSolution dense = solve_offline(p);
    for (const int c : {1, 16})
      for (const bool table : {true, false})
        for (const int keep : {0, 2})
          for (const bool seed : {true, false}) {
            if (!table && !seed) continue;  // the seed from a schedule needs the table
            const OfflineSolution s = streaming(p, c, 1, table, keep, seed);
            const double tol = 1e-9 * std::max(1.0, dense.value);
            ASSERT_EQ(s.method, "column-generation");
            ASSERT_NEAR(s.value, dense.value, tol)
                << "n=" << p.n() << " k=" << p.budget << " r=" << p.recent << " c=" << c << " table " << table
                << " keep " << keep << " schedule seed " << seed;
            if (keep > 0 && s.pairs < streaming(p, c, 1, table, 0, seed).pairs) ++pruned_smaller;
            ASSERT_NEAR(s.upper, s.value, tol);
            if (s.rounds == 0) {
              ASSERT_EQ(s.passes, 1);  // nothing to evict: the evaluation only
            } else if (!table) {
              ASSERT_EQ(s.passes, s.rounds + 2);  // the seed, a pricing pass per round, the evaluation
            } else {
              // The seed, one exact pass per certification attempt, the evaluation; rounds on the table
              // recompute nothing.
              ASSERT_GE(s.passes, 3);
              ASSERT_LE(s.passes, s.rounds + 2);
              table_retries = std::max(table_retries, s.passes - 3);
            }
            rounds_seen = std::max(rounds_seen, s.rounds);
          }
  }
  EXPECT_GT(rounds_seen, 1);  // pricing did add pairs somewhere
  EXPECT_GT(pruned_smaller, 0);
  RecordProperty("table_retries", table_retries);
}

// Costs a float cannot bound (beyond 1e30) turn the table off: every round prices on the rows, and
// the optimum is the dense solver's.
TEST(StreamingOracle, CostsBeyondAFloatPriceOnTheRows) {
  std::mt19937_64 g(84);
  OfflineProblem p = random_offline_problem(g, 40, false);
  p.w *= 1e32;
  const OfflineSolution dense = solve_offline(p), s = streaming(p, 2);
  EXPECT_NEAR(s.value, dense.value, 1e-9 * dense.value);
  EXPECT_NEAR(s.upper, s.value, 1e-9 * dense.value);
  EXPECT_EQ(s.passes, s.rounds + 2);
}

// On attention the optimum is unique: the same schedule and the same bits as the dense solver, from
// rows recomputed out of q and k, on one thread or several.
TEST(StreamingOracle, RecomputedAttentionGivesTheDenseSolversBits) {
  for (const int r : {0, 4, 16}) {
    const Trace tr = test::synthetic_layer(1, 1, 256, 16, 0, 9 + r);
    const HeadView head(tr, 0, 0);
    OfflineProblem p;
    p.w = dense_attention(head);
    p.budget = 51;
    p.recent = r;
    const OfflineSolution dense = solve_offline(p);
    const AttentionWeightRows rows(head);
    int recomputed_passes = 0;
    for (const int threads : {1, 2})
      for (const bool table : {false, true}) {
        StreamingOfflineOptions o;
        o.threads = threads;
        if (!table) o.table_bytes = 0;
        const OfflineSolution s = solve_offline_streaming(rows, p.budget, p.recent, o);
        EXPECT_EQ(s.end, dense.end) << "r=" << r;
        EXPECT_EQ(s.value, dense.value) << "r=" << r;
        EXPECT_NEAR(s.upper, s.value, 1e-9 * s.value) << "r=" << r;
        EXPECT_EQ(dual_bound(p, s.end, s.price), s.upper);
        if (!table) recomputed_passes = s.passes;
        if (table) {
          EXPECT_LT(s.passes, recomputed_passes) << "r=" << r;  // the table saves passes over the rows
        }
      }
  }
}

// A table on every stride-th step only bounds the costs of the steps between its rows from below:
// the optimum stays the dense solver's, certified, whatever the stride (1, a few steps, longer than
// the problem), with one candidate per step or 16.
TEST(StreamingOracle, ATableOnEveryFewStepsGivesTheSameOptimum) {
  std::mt19937_64 g(85);
  int strided = 0;
  for (int t = 0; t < 300; ++t) {
    const OfflineProblem p = random_offline_problem(g, 1 + static_cast<int>(g() % 80), t % 4 == 0);
    const OfflineSolution dense = solve_offline(p);
    const double tol = 1e-9 * std::max(1.0, dense.value);
    for (const int stride : {1, 2, 3, 7, 1000})
      for (const int c : {1, 16}) {
        StreamingOfflineOptions o;
        o.table_stride = stride;
        o.table_bytes_per_slot = 0.0;  // the stride asked for, at any budget
        o.candidates = c;
        const OfflineSolution s = solve_offline_streaming(DenseWeightRows(p.w), p.budget, p.recent, o);
        const std::string at = "n=" + std::to_string(p.n()) + " k=" + std::to_string(p.budget) +
                               " r=" + std::to_string(p.recent) + " stride " + std::to_string(stride);
        ASSERT_NEAR(s.value, dense.value, tol) << at;
        ASSERT_NEAR(s.upper, s.value, tol) << at;
        ASSERT_NEAR(dual_bound(p, s.end, s.price), s.upper, tol) << at;
        if (s.rounds > 0) {
          const int steps = p.n() - p.budget;
          ASSERT_EQ(s.table_stride, std::min(stride, steps)) << at;
          if (s.table_stride > 1) ++strided;
        }
      }
  }
  EXPECT_GT(strided, 100);
}

// The table takes at most table_bytes_per_slot per token and cache slot: at k = n / 5 the default
// holds every step's row; a cap of 4 bytes per slot, or of a third of the whole table, makes the
// solver keep every few steps' row, within the cap, and the optimum keeps the dense solver's bits.
TEST(StreamingOracle, TheCostTableStaysWithinItsMemoryCap) {
  const Trace tr = test::synthetic_layer(1, 1, 300, 16, 0, 21);
  const HeadView head(tr, 0, 0);
  OfflineProblem p;
  p.w = dense_attention(head);
  p.budget = 60;
  const OfflineSolution dense = solve_offline(p);
  const AttentionWeightRows rows(head);
  const long long whole = solve_offline_streaming(rows, p.budget, 0).table_bytes;
  EXPECT_EQ(solve_offline_streaming(rows, p.budget, 0).table_stride, 1);
  EXPECT_EQ(whole, static_cast<long long>(sizeof(float)) * (300 * 301 - 60 * 61) / 2);  // rows 60..299
  for (const bool per_slot : {true, false}) {
    StreamingOfflineOptions o;
    if (per_slot)
      o.table_bytes_per_slot = 4.0;
    else
      o.table_bytes = whole / 3;
    const double cap = per_slot ? 4.0 * 300 * 60 : static_cast<double>(whole / 3);
    const OfflineSolution s = solve_offline_streaming(rows, p.budget, 0, o);
    EXPECT_GT(s.table_stride, 1) << per_slot;
    EXPECT_GT(s.table_bytes, 0) << per_slot;
    EXPECT_LE(static_cast<double>(s.table_bytes), cap) << per_slot;
    EXPECT_EQ(s.end, dense.end) << per_slot;
    EXPECT_EQ(s.value, dense.value) << per_slot;
    EXPECT_NEAR(s.upper, s.value, 1e-9 * s.value) << per_slot;
  }
  StreamingOfflineOptions none;
  none.table_bytes_per_slot = 1e-9;  // not one row fits: every round on the rows
  const OfflineSolution s = solve_offline_streaming(rows, p.budget, 0, none);
  EXPECT_EQ(s.table_stride, 0);
  EXPECT_EQ(s.table_bytes, 0);
  EXPECT_EQ(s.passes, s.rounds + 2);
  EXPECT_EQ(s.value, dense.value);
}

TEST(StreamingOracle, RowsComeInOrderWithTheMatrixBits) {
  const Trace tr = test::synthetic_layer(1, 1, 70, 16, 0, 3);
  const HeadView head(tr, 0, 0);
  const Eigen::MatrixXd a = dense_attention(head);
  const AttentionWeightRows rows(head);
  for (const bool backwards : {false, true})
    for (const int threads : {1, 2, 3}) {
      std::vector<int> order;
      for_each_row(rows, 5, 70, backwards, threads, [&](int i, std::span<const double> row) {
        order.push_back(i);
        ASSERT_EQ(static_cast<int>(row.size()), i + 1);
        for (int j = 0; j <= i; ++j) ASSERT_EQ(row[static_cast<size_t>(j)], a(i, j)) << i << "," << j;
      });
      ASSERT_EQ(order.size(), 65u);
      for (size_t x = 0; x < order.size(); ++x)
        EXPECT_EQ(order[x], backwards ? 69 - static_cast<int>(x) : 5 + static_cast<int>(x));
    }
}

// Several units in lockstep: every unit's row at each step, in unit order; a query group's mean
// row has the bits of the dense mean; pages of b sum the token rows over each page.
TEST(StreamingOracle, UnitRowsGroupMeansAndPages) {
  const Trace tr = test::synthetic_layer(4, 1, 40, 16, 0, 5);
  const std::vector<HeadView> group{HeadView(tr, 0, 0), HeadView(tr, 0, 1), HeadView(tr, 0, 2)};
  Eigen::MatrixXd mean = Eigen::MatrixXd::Zero(40, 40);
  for (const HeadView& h : group) mean += dense_attention(h);
  mean /= 3;
  const GroupMeanWeightRows grouped(group);
  const AttentionWeightRows last(HeadView(tr, 0, 3));
  const Eigen::MatrixXd a3 = dense_attention(HeadView(tr, 0, 3));
  const WeightRows* units[] = {&grouped, &last};
  for (const int threads : {1, 2}) {
    std::vector<std::pair<int, int>> order;
    for_each_unit_row(units, 2, 40, true, threads, [&](int i, int u, std::span<const double> row) {
      order.push_back({i, u});
      const Eigen::MatrixXd& m = u == 0 ? mean : a3;
      for (int j = 0; j <= i; ++j) ASSERT_EQ(row[static_cast<size_t>(j)], m(i, j)) << i << "," << j << " unit " << u;
    });
    ASSERT_EQ(order.size(), 2u * 38u);
    for (size_t x = 0; x < order.size(); ++x)
      EXPECT_EQ(order[x], (std::pair{39 - static_cast<int>(x / 2), static_cast<int>(x % 2)}));
  }
  const DenseWeightRows dense(mean);
  const PagedWeightRows pages(dense, 8);
  ASSERT_EQ(pages.n(), 5);
  std::vector<double> row(5);
  pages.row(4, std::span<double>(row.data(), 5));  // page step 4: queries 32..39
  for (int p = 0; p < 5; ++p) {
    double expected = 0;
    for (int t = 32; t < 40; ++t)
      for (int j = 8 * p; j < std::min(8 * p + 8, t + 1); ++j) expected += mean(t, j);
    EXPECT_NEAR(row[static_cast<size_t>(p)], expected, 1e-12) << p;
  }
}

// The first m steps of a problem: its rows, and the optimum of the m x m corner.
TEST(StreamingOracle, PrefixRowsAreTheFirstSteps) {
  std::mt19937_64 g(85);
  const OfflineProblem p = random_offline_problem(g, 30, false);
  const DenseWeightRows rows(p.w);
  const PrefixWeightRows prefix(rows, 20);
  EXPECT_EQ(prefix.n(), 20);
  OfflineProblem corner;
  corner.w = p.w.topLeftCorner(20, 20);
  corner.budget = std::min(p.budget, 20);
  EXPECT_EQ(solve_offline_streaming(prefix, corner.budget, 0).value, solve_offline(corner).value);
  EXPECT_THROW(PrefixWeightRows(rows, 0), Error);
  EXPECT_THROW(PrefixWeightRows(rows, 31), Error);
}

TEST(StreamingOracle, EvaluatorRefusesBadSchedulesPricesAndWeights) {
  std::mt19937_64 g(83);
  OfflineProblem p = random_offline_problem(g, 9, false);
  p.budget = 3;
  p.recent = 1;
  const OfflineSolution s = streaming(p, 2);
  const DenseWeightRows rows(p.w);
  EXPECT_THROW(evaluate_schedule(rows, 3, 1, std::vector<int>(9, 8), s.price), Error);  // over budget
  std::vector<double> negative = s.price;
  negative[4] = -1.0;
  EXPECT_THROW(evaluate_schedule(rows, 3, 1, s.end, negative), Error);
  std::vector<int> early = s.end;
  early[5] = 3;  // before its own step: outside the window
  EXPECT_THROW(evaluate_schedule(rows, 3, 1, early, s.price), Error);
  EXPECT_THROW(solve_offline_streaming(rows, 10, 0), Error);
  EXPECT_THROW(solve_offline_streaming(rows, 3, 4), Error);
  p.w(7, 2) = -0.5;
  EXPECT_THROW(solve_offline_streaming(DenseWeightRows(p.w), 3, 1), Error);
  p.w(7, 2) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(solve_offline_streaming(DenseWeightRows(p.w), 3, 1), Error);
}

TEST(StreamingOracle, NoEvictionsAndAllWindow) {
  std::mt19937_64 g(84);
  OfflineProblem p = random_offline_problem(g, 12, false);
  p.budget = 12;  // everything kept
  const OfflineSolution all = streaming(p, 4);
  EXPECT_EQ(all.rounds, 0);
  EXPECT_NEAR(all.value, solve_offline(p).value, 1e-12);
  p.budget = 5;
  p.recent = 5;  // no heavy pool: the window alone
  EXPECT_NEAR(streaming(p, 4).value, solve_offline(p).value, 1e-12);
  p.recent = 0;
  p.budget = 0;  // nothing kept
  EXPECT_EQ(streaming(p, 4).value, 0.0);
}
