// The offline policies' schedules in the closed loops: lookahead's schedule on a trace is what
// replaying the policy on the same trace's dense attention keeps (each KV group's mean), the
// oracle's (solved without the dense matrix) reaches the dense solver's certified optimum within
// its budget, and only an offline policy has one.
#include "kvo/studies/offline_schedule.hpp"

#include <gtest/gtest.h>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "test_support.hpp"

using namespace kvo;

TEST(OfflineSchedule, LookaheadsScheduleIsItsReplayOnTheTrace) {
  const int n = 40;
  const Trace tr = test::random_trace(2, 4, 2, n, 8, 17, 3.0);
  const Budget budget(Amount::parse("10"), Amount::parse("4", true));
  const auto schedules = studies::offline_schedules(PolicyId::Lookahead, tr, budget);
  ReplayOptions o;
  o.run.policy.id = PolicyId::Lookahead;
  o.run.budget = budget;
  o.run.gqa = GqaMode::KvMean;
  const ReplayResult r = replay(tr, o);
  const int g = tr.group_size();
  for (int l = 0; l < tr.n_layers; ++l)
    for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
      const std::vector<int> end = (*schedules)(l, kv);
      ASSERT_EQ(end.size(), static_cast<size_t>(n));
      const HeadReplay& h = r.heads[static_cast<size_t>(l * tr.n_heads + kv * g)];
      for (int i = 0; i < n; ++i) {
        std::vector<int> held;
        for (int j = 0; j <= i; ++j)
          if (end[static_cast<size_t>(j)] >= i) held.push_back(j);
        ASSERT_EQ(held, h.steps[static_cast<size_t>(i)].kept) << "layer " << l << " kv " << kv << " step " << i;
      }
    }
  EXPECT_THROW(studies::offline_schedules(PolicyId::H2O, tr, budget), Error);
}

TEST(OfflineSchedule, OraclesScheduleIsTheDenseSolversOptimum) {
  const int n = 48, k = 9;
  const Trace tr = test::random_trace(2, 4, 2, n, 8, 23, 3.0);
  const auto schedules = studies::offline_schedules(PolicyId::Oracle, tr, Budget(Amount::parse(std::to_string(k))));
  const int g = tr.group_size();
  for (int l = 0; l < tr.n_layers; ++l)
    for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
      OfflineProblem p;
      p.w = Eigen::MatrixXd::Zero(n, n);
      for (int h = kv * g; h < (kv + 1) * g; ++h) p.w += dense_attention(HeadView(tr, l, h));
      p.w /= g;
      p.budget = k;
      const OfflineSolution dense = solve_offline(p);
      ASSERT_NEAR(dense.value, dense.upper, 1e-9 * dense.value);  // certified
      const std::vector<int> end = (*schedules)(l, kv);
      ASSERT_EQ(end.size(), static_cast<size_t>(n));
      double value = 0.0;
      for (int i = 0; i < n; ++i) {
        int held = 0;
        for (int j = 0; j <= i; ++j)
          if (end[static_cast<size_t>(j)] >= i) {
            ++held;
            value += p.w(i, j);
          }
        ASSERT_LE(held, k) << "layer " << l << " kv " << kv << " step " << i;
      }
      EXPECT_NEAR(value, dense.value, 1e-9 * dense.value) << "layer " << l << " kv " << kv;
    }
}
