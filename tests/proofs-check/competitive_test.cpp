// The offline oracle's work units (`kvoracle oracle --offline` over MPI ranks): computed alone, in
// any order, sent as bytes and assembled, they give competitive_ratios()'s result bit for bit.
#include "kvo/proofs_check/competitive.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"
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
