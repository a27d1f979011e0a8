// The run configuration: one validated value; budgets resolve per unit (the full cache holds
// everything), overrides and the recent part survive a change of total, and what cannot run on a
// trace is refused with one line.
#include "kvo/core/run_config.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"
#include "test_support.hpp"

using namespace kvo;

TEST(RunConfig, BudgetsResolvePerUnitAndTheFullCacheHoldsEverything) {
  RunConfig c;
  c.budget = Budget::parse("20%", "25%", {"L1=10", "L1H2=4"});
  EXPECT_EQ(c.unit_budget(100, 0, 0).total, 20);
  EXPECT_EQ(c.unit_budget(100, 0, 0).recent, 5);
  EXPECT_EQ(c.unit_budget(100, 1, 0).total, 10);
  EXPECT_EQ(c.unit_budget(100, 1, 2).total, 4);
  c.policy = PolicySpec::named("full");
  EXPECT_EQ(c.unit_budget(100, 1, 2).total, 100);
  const Budget wider = c.budget.with_total(Amount::parse("50%"));  // a sweep keeps recent and overrides
  EXPECT_EQ(wider.resolve(100, 0, 0).total, 50);
  EXPECT_EQ(wider.resolve(100, 0, 0).recent, 12);
  EXPECT_EQ(wider.resolve(100, 1, 2).total, 4);
  EXPECT_TRUE(wider.has_overrides());
}

TEST(RunConfig, RefusesWhatCannotRunOnTheTrace) {
  const Trace tr = test::random_trace(2, 4, 2, 30, 8, 3);
  RunConfig c;
  EXPECT_NO_THROW(c.validate(tr));
  EXPECT_EQ(c.chosen_layers(tr.n_layers), (std::vector<int>{0, 1}));
  c.layers = {2};
  EXPECT_THROW(c.validate(tr), Error);
  c.layers = {1};
  c.heads = {3};
  EXPECT_NO_THROW(c.validate(tr));
  c.gqa = GqaMode::KvMean;  // heads count KV heads now: there are 2
  EXPECT_THROW(c.validate(tr), Error);
  c.gqa = GqaMode::PerQueryHead;
  c.prompt_len = 31;
  EXPECT_THROW(c.validate(tr), Error);
  c.prompt_len = 0;
  c.budget = Budget::parse("8", "", {"L1H3=40"});  // only unit (1, 3) is over the sequence
  try {
    c.validate(tr);
    FAIL() << "a budget of 40 tokens on 30 must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("larger than the sequence (30 tokens)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.with_policy(PolicyId::Tova).policy.id, PolicyId::Tova);
  EXPECT_EQ(parse_gqa("kv-max"), GqaMode::KvMax);
  EXPECT_THROW(parse_gqa("sideways"), Error);
}
