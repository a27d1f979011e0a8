// The shared-capacity offline optimum (oracle/offline_shared.hpp): equal to enumerating every
// eviction sequence of the shared pool on small instances, certified by its dual, one unit equal
// to solve_offline, sharing never below per-unit budgets, and bad input refused.
#include "kvo/oracle/offline_shared.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <tuple>

#include "kvo/core/error.hpp"
#include "kvo/oracle/offline_streaming.hpp"
#include "kvo/oracle/weight_rows.hpp"
#include "random_units.hpp"

using namespace kvo;
using kvo::test::random_units;

namespace {

// Every schedule of the shared pool, step by step: each unit's token j joins the heavy pool at
// j + r, and whenever the pool holds more than H (k - r) tokens, every choice of which to evict
// is tried (evicting more never gains: w >= 0). Independent of the solver's code.
double enumerate_shared(const std::vector<OfflineProblem>& units) {
  const int H = static_cast<int>(units.size()), n = units[0].n(), r = units[0].recent;
  const int capacity = H * (units[0].budget - r);
  double best = -1;
  std::function<void(int, std::vector<std::pair<int, int>>, double)> step =
      [&](int t, std::vector<std::pair<int, int>> pool, double value) {
        if (t == n) {
          best = std::max(best, value);
          return;
        }
        double window = 0;  // the forced recent tokens j = t - r + 1 .. t of every unit
        for (int u = 0; u < H; ++u)
          for (int j = std::max(0, t - r + 1); j <= t; ++j) window += units[static_cast<size_t>(u)].w(t, j);
        if (t - r >= 0)
          for (int u = 0; u < H; ++u) pool.emplace_back(u, t - r);
        const int excess = std::max(0, static_cast<int>(pool.size()) - capacity);
        std::vector<char> evict(pool.size(), 0);
        std::fill(evict.end() - excess, evict.end(), 1);
        do {  // every subset of `excess` tokens to evict
          std::vector<std::pair<int, int>> kept;
          double v = value + window;
          for (size_t x = 0; x < pool.size(); ++x)
            if (!evict[x]) {
              kept.push_back(pool[x]);
              v += units[static_cast<size_t>(pool[x].first)].w(t, pool[x].second);
            }
          step(t + 1, kept, v);
        } while (std::next_permutation(evict.begin(), evict.end()));
      };
  step(0, {}, 0.0);
  return best;
}

}  // namespace

TEST(OfflineShared, EqualsEnumerationWithATightCertificate) {
  for (const auto& [H, n, k, r] : std::vector<std::tuple<int, int, int, int>>{
           {2, 6, 2, 0}, {2, 7, 2, 1}, {3, 5, 1, 0}, {2, 6, 3, 1}, {1, 7, 3, 0}, {2, 5, 1, 1}}) {
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      SCOPED_TRACE("H " + std::to_string(H) + ", n " + std::to_string(n) + ", k " + std::to_string(k) + ", r " +
                   std::to_string(r) + ", seed " + std::to_string(seed));
      const auto units = random_units(H, n, k, r, seed);
      const SharedOfflineSolution s = solve_offline_shared(units);
      EXPECT_NEAR(s.value, enumerate_shared(units), 1e-9);
      EXPECT_NEAR(s.upper, s.value, 1e-9 * std::max(1.0, s.value));
      double parts = 0;
      for (double v : s.unit_value) parts += v;
      EXPECT_NEAR(parts, s.value, 1e-12);
    }
  }
}

TEST(OfflineShared, OneUnitIsSolveOfflineAndSharingNeverLoses) {
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    const auto units = random_units(3, 40, 8, 2, 10 + seed);
    const SharedOfflineSolution shared = solve_offline_shared(units);
    EXPECT_NEAR(shared.upper, shared.value, 1e-9 * shared.value);
    double per_unit = 0;
    for (const OfflineProblem& p : units) {
      const OfflineSolution alone = solve_offline(p);
      per_unit += alone.value;
      const SharedOfflineSolution one = solve_offline_shared(std::span(&p, 1));
      EXPECT_NEAR(one.value, alone.value, 1e-9 * alone.value);
    }
    EXPECT_GE(shared.value, per_unit - 1e-9 * per_unit);
    // The shared schedule holds the shared capacity, and may exceed a unit's own k.
    EXPECT_NO_THROW(evaluate_shared_schedule(units, shared.end, shared.price));
  }
}

TEST(OfflineShared, RefusesMismatchedUnitsAndOverfullSchedules) {
  auto units = random_units(2, 6, 2, 0, 1);
  units[1].budget = 3;
  try {
    solve_offline_shared(units);
    ADD_FAILURE() << "accepted units of different budgets";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unit 1 differs from unit 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(solve_offline_shared(std::span<const OfflineProblem>()), Error);
  units[1].budget = 2;
  const std::vector<std::vector<int>> everything(2, std::vector<int>(6, 5));  // keep every token to the end
  EXPECT_THROW(evaluate_shared_schedule(units, everything, std::vector<double>(6, 0.0)), Error);
}

namespace {

std::vector<const WeightRows*> row_sources(const std::vector<DenseWeightRows>& rows) {
  std::vector<const WeightRows*> out;
  for (const DenseWeightRows& r : rows) out.push_back(&r);
  return out;
}

}  // namespace

// Column generation over rows on demand reaches the dense shared optimum, certified, with a
// schedule the dense certificate accepts, on one thread or two, with one candidate per step, with
// lists pruned to one pair per unit, with the lists seeded by the cheapest pairs alone, and with the
// cost table on every third step only.
TEST(OfflineShared, StreamingEqualsTheDenseSolver) {
  int cases = 0;
  for (int H : {1, 2, 3, 4})
    for (const auto& [n, k, r] : {std::tuple{24, 6, 0}, std::tuple{40, 9, 3}, std::tuple{33, 20, 5}}) {
      const std::vector<OfflineProblem> units = test::random_units(H, n, k, r, 1000 * H + 10 * n + r);
      const SharedOfflineSolution dense = solve_offline_shared(units);
      std::vector<DenseWeightRows> rows;
      for (const OfflineProblem& u : units) rows.emplace_back(u.w);
      const std::vector<const WeightRows*> sources = row_sources(rows);
      for (const auto& [threads, candidates, keep, seed, stride] :
           {std::tuple{1, 8, 16, true, 0}, std::tuple{2, 1, 16, true, 0}, std::tuple{1, 2, 1, true, 0},
            std::tuple{1, 2, 1, false, 0}, std::tuple{1, 2, 16, true, 3}}) {
        StreamingOfflineOptions o;
        o.threads = threads;
        o.candidates = candidates;
        o.keep = keep;
        o.schedule_seed = seed;
        o.table_stride = stride;
        const SharedOfflineSolution s = solve_offline_shared_streaming(sources, k, r, o);
        const std::string at = "H " + std::to_string(H) + " n " + std::to_string(n) + " r " + std::to_string(r);
        EXPECT_NEAR(s.value, dense.value, 1e-9 * dense.value) << at;
        EXPECT_NEAR(s.upper, s.value, 1e-9 * s.value) << at;
        const ScheduleCheck check = evaluate_shared_schedule(units, s.end, s.price);
        EXPECT_NEAR(check.value, s.value, 1e-9 * s.value) << at;
        EXPECT_NEAR(check.upper, s.upper, 1e-9 * s.value) << at;
        ASSERT_EQ(s.unit_value.size(), static_cast<size_t>(H));
        ++cases;
      }
    }
  EXPECT_EQ(cases, 60);
}

// One unit: the same schedule and bits as the per-head column generation.
TEST(OfflineShared, StreamingWithOneUnitIsTheStreamingSolver) {
  const std::vector<OfflineProblem> units = test::random_units(1, 50, 12, 4, 77);
  const DenseWeightRows rows(units[0].w);
  const WeightRows* one[] = {&rows};
  const SharedOfflineSolution shared = solve_offline_shared_streaming(one, 12, 4);
  const OfflineSolution alone = solve_offline_streaming(rows, 12, 4);
  EXPECT_EQ(shared.end[0], alone.end);
  EXPECT_NEAR(shared.value, alone.value, 1e-12 * alone.value);
}

TEST(OfflineShared, StreamingRefusesMismatchedUnitsAndSizes) {
  const std::vector<OfflineProblem> a = test::random_units(1, 10, 4, 0, 1), b = test::random_units(1, 12, 4, 0, 2);
  const DenseWeightRows ra(a[0].w), rb(b[0].w);
  const WeightRows* mixed[] = {&ra, &rb};
  EXPECT_THROW(solve_offline_shared_streaming(mixed, 4, 0), Error);
  const WeightRows* one[] = {&ra};
  EXPECT_THROW(solve_offline_shared_streaming(one, 11, 0), Error);  // k > n
  EXPECT_THROW(solve_offline_shared_streaming(one, 4, 5), Error);   // r > k
  EXPECT_THROW(solve_offline_shared_streaming({}, 4, 0), Error);
}
