// Periodic compression's offline optimum (oracle/offline_periodic.hpp): equal to enumerating every
// schedule on small instances, certified by its dual, interval 1 equal to every-step eviction with
// one more slot, sharing never below per-unit targets, and bad schedules refused.
#include "kvo/oracle/offline_periodic.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "kvo/core/error.hpp"
#include "random_units.hpp"

using namespace kvo;
using kvo::test::random_units;

namespace {

// Step by step: every unit's token t arrives, the query of step t weighs the whole cache, and
// after the queries of steps P + N - 1, P + 2N - 1, ... (before the last step) every choice of
// tokens older than the window that brings the units down to H T tokens is tried. Written from
// the schedule's definition, independent of the solver.
double enumerate_periodic(const std::vector<OfflineProblem>& units, int prompt, int interval) {
  const int H = static_cast<int>(units.size()), n = units[0].n(), T = units[0].budget, r = units[0].recent;
  double best = -1;
  std::function<void(int, std::vector<std::pair<int, int>>, double)> step =
      [&](int t, std::vector<std::pair<int, int>> cache, double value) {
        if (t == n) {
          best = std::max(best, value);
          return;
        }
        for (int u = 0; u < H; ++u) cache.emplace_back(u, t);
        for (const auto& [u, j] : cache) value += units[static_cast<size_t>(u)].w(t, j);
        const bool compress = t >= prompt && (t - prompt + 1) % interval == 0 && t < n - 1;
        const int excess = compress ? std::max(0, static_cast<int>(cache.size()) - H * T) : 0;
        if (excess == 0) return step(t + 1, cache, value);
        std::vector<std::pair<int, int>> old, young;  // evictable, and inside the window
        for (const auto& x : cache) (x.second <= t - r ? old : young).push_back(x);
        ASSERT_GE(static_cast<int>(old.size()), excess);
        std::vector<char> evict(old.size(), 0);
        std::fill(evict.end() - excess, evict.end(), 1);
        do {
          std::vector<std::pair<int, int>> kept = young;
          for (size_t x = 0; x < old.size(); ++x)
            if (!evict[x]) kept.push_back(old[x]);
          step(t + 1, kept, value);
        } while (std::next_permutation(evict.begin(), evict.end()));
      };
  step(0, {}, 0.0);
  return best;
}

TEST(OfflinePeriodic, EqualsEnumerationAndIsCertified) {
  int cases = 0;
  for (int H = 1; H <= 2; ++H)
    for (int n = 3; n <= 8 - H; ++n)
      for (int T = 1; T < n; ++T)
        for (int r = 0; r <= std::min(T, 2); ++r)
          for (int interval = 1; interval <= 3; ++interval)
            for (int prompt = 0; prompt <= 2 && prompt < n; ++prompt) {
              const auto units = random_units(H, n, T, r, 1000u * n + 100u * T + 10u * r + interval + 7u * prompt);
              const PeriodicSchedule sched{prompt, interval};
              const SharedOfflineSolution sol = solve_offline_periodic(units, sched);
              const double brute = enumerate_periodic(units, prompt, interval);
              ASSERT_NEAR(sol.value, brute, 1e-9)
                  << "H=" << H << " n=" << n << " T=" << T << " r=" << r << " N=" << interval << " P=" << prompt;
              EXPECT_NEAR(sol.upper, sol.value, 1e-9) << "the dual certificate does not close";
              ++cases;
            }
  EXPECT_GT(cases, 300);
}

TEST(OfflinePeriodic, IntervalOneIsEveryStepEvictionWithOneMoreSlot) {
  // Compressing to T after every query: each query weighs T kept tokens and its own, which is
  // every-step eviction at k = T + 1 with the newest token always kept (window r + 1).
  for (int r = 0; r <= 3; ++r)
    for (int T : {r == 0 ? 1 : r, 5, 17}) {
      const auto units = random_units(1, 60, T, r, 77u + static_cast<unsigned>(T + r));
      const SharedOfflineSolution periodic = solve_offline_periodic(units, {0, 1});
      OfflineProblem every = units[0];
      every.budget = T + 1;
      every.recent = r + 1;
      const OfflineSolution ref = solve_offline(every);
      EXPECT_NEAR(periodic.value, ref.value, 1e-9) << "T=" << T << " r=" << r;
      EXPECT_NEAR(periodic.upper, periodic.value, 1e-9);
    }
}

TEST(OfflinePeriodic, SharingAndLongerIntervalsNeverLose) {
  const auto units = random_units(3, 90, 20, 4, 5);
  double alone = 0.0;
  for (const OfflineProblem& p : units) alone += solve_offline_periodic(std::span(&p, 1), {10, 16}).value;
  const SharedOfflineSolution shared = solve_offline_periodic(units, {10, 16});
  EXPECT_GE(shared.value, alone - 1e-9);
  EXPECT_NEAR(shared.upper, shared.value, 1e-8);
  // Between compressions the cache only grows: every-step eviction at the same target, with one
  // more slot, is never better than any interval's compression to that target.
  OfflineProblem every = units[0];
  every.budget = 21;
  every.recent = 5;
  const double step_value = solve_offline(every).value;
  for (int interval : {1, 2, 7, 32})
    EXPECT_GE(solve_offline_periodic(std::span(units.data(), 1), {0, interval}).value, step_value - 1e-9);
}

TEST(OfflinePeriodic, CompressionSteps) {
  EXPECT_EQ(periodic_compression_steps(10, {0, 3}), (std::vector<int>{2, 5, 8}));
  EXPECT_EQ(periodic_compression_steps(10, {4, 2}), (std::vector<int>{5, 7}));  // not after the last step
  EXPECT_TRUE(periodic_compression_steps(10, {4, 6}).empty());
  EXPECT_THROW(periodic_compression_steps(10, {0, 0}), Error);
  EXPECT_THROW(periodic_compression_steps(10, {10, 2}), Error);
}

TEST(OfflinePeriodic, RefusesSchedulesOutsideTheProtocol) {
  const auto units = random_units(1, 12, 4, 1, 9);
  const PeriodicSchedule sched{0, 4};  // compressions after steps 3 (nothing to evict) and 7
  const SharedOfflineSolution sol = solve_offline_periodic(units, sched);
  std::vector<std::vector<int>> end = sol.end;
  const auto evicted = std::find(end[0].begin(), end[0].end(), 7);
  ASSERT_NE(evicted, end[0].end());
  *evicted = 8;  // not a compression step
  EXPECT_THROW(evaluate_periodic_schedule(units, sched, end, sol.price), Error);
  *evicted = 11;  // kept to the end: one token too many after the compression
  EXPECT_THROW(evaluate_periodic_schedule(units, sched, end, sol.price), Error);
  end = sol.end;
  end[0][3] = 3;  // inside the window at its compression
  EXPECT_THROW(evaluate_periodic_schedule(units, sched, end, sol.price), Error);
  std::vector<double> negative = sol.price;
  negative[3] = -1.0;
  EXPECT_THROW(evaluate_periodic_schedule(units, sched, sol.end, negative), Error);
}

}  // namespace
