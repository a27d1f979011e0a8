// The offline policies' schedules in the closed loops: lookahead's schedule on a trace is what
// replaying the policy on the same trace's dense attention keeps (each KV group's mean), and only an
// offline policy has one.
#include "kvo/studies/offline_schedule.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/replay.hpp"
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
