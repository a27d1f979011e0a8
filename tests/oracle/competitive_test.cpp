// The offline oracle's work units (`kvoracle oracle --offline` over MPI ranks): computed alone, in
// any order, sent as bytes and assembled, they give competitive_ratios()'s result bit for bit.
#include "kvo/oracle/competitive.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/oracle/offline_streaming.hpp"
#include "offline_problems.hpp"
#include "test_support.hpp"

using namespace kvo;

TEST(CompetitivePlan, UnitsThroughBytesAssembleIntoTheSameResult) {
  const Trace tr = test::synthetic_layer(3, 1, 48, 12, 10, 21);
  CompetitiveOptions o;
  o.forced_window = 2;
  for (PolicyId p : {PolicyId::H2O, PolicyId::Random, PolicyId::Tova}) {
    ReplayOptions ro;
    ro.run.policy.id = p;
    ro.run.budget = Budget(Amount::parse("25%"));
    o.policies.push_back(ro);
  }
  o.threads = 2;
  const auto whole = competitive_ratios(tr, o);
  const CompetitivePlan plan(tr, o);
  std::vector<std::vector<HeadCompetitive>> units(static_cast<size_t>(plan.size()));
  for (int u = plan.size() - 1; u >= 0; --u)
    units[static_cast<size_t>(u)] = decode_competitive(encode_competitive(plan.run(u)));
  const auto parts = plan.assemble(std::move(units));
  ASSERT_EQ(parts.size(), whole.size());
  for (size_t x = 0; x < whole.size(); ++x) {
    EXPECT_EQ(parts[x].layer, whole[x].layer);
    EXPECT_EQ(parts[x].head, whole[x].head);
    EXPECT_EQ(parts[x].opt_dyn, whole[x].opt_dyn);
    EXPECT_EQ(parts[x].dual_bound, whole[x].dual_bound);
    EXPECT_EQ(parts[x].static_sum, whole[x].static_sum);
    EXPECT_EQ(parts[x].violations, whole[x].violations);
    ASSERT_EQ(parts[x].policies.size(), 3u);
    for (size_t p = 0; p < 3; ++p) {
      EXPECT_EQ(parts[x].policies[p].policy, whole[x].policies[p].policy);
      EXPECT_EQ(parts[x].policies[p].value, whole[x].policies[p].value);
      EXPECT_EQ(parts[x].policies[p].outside, whole[x].policies[p].outside);
    }
  }
  EXPECT_THROW(decode_competitive(std::string("\xff\x01", 2)), Error);
}

// verify and `oracle --offline` skip the solver's closing pass (StreamingOfflineOptions::evaluate =
// false): the ordering's own pass then gives OPT_dyn, the same bits as the solver's evaluation.
TEST(OfflineOrdering, AnUnevaluatedSolutionTakesTheSameValueFromTheOrderingsPass) {
  std::mt19937_64 g(5);
  for (int t = 0; t < 20; ++t) {
    const OfflineProblem p = test::random_offline_problem(g, 2 + static_cast<int>(g() % 40), t % 3 == 0);
    const DenseWeightRows rows(p.w);
    StreamingOfflineOptions lazy;
    lazy.evaluate = false;
    const OfflineSolution full = solve_offline_streaming(rows, p.budget, p.recent),
                          bare = solve_offline_streaming(rows, p.budget, p.recent, lazy);
    ASSERT_TRUE(std::isnan(bare.value) && std::isnan(bare.upper));
    EXPECT_EQ(bare.end, full.end);
    EXPECT_EQ(bare.price, full.price);
    EXPECT_EQ(bare.passes + 1, full.passes);
    const OfflineOrdering a = order_against_optimum(rows, p.budget, p.recent, full, {}),
                          b = order_against_optimum(rows, p.budget, p.recent, bare, {});
    EXPECT_EQ(b.opt, full.value) << "trial " << t;
    EXPECT_EQ(a.opt, b.opt);
    EXPECT_EQ(a.certificate, b.certificate);
    EXPECT_TRUE(b.violations.empty()) << b.violations.front();
  }
}
