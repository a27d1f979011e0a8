// Diversity of greedy continuations: the word statistics on texts whose answer is known, the full
// cache's continuation equal to plain greedy generation, one row per policy and budget, E10's
// record for h2o, and refusals naming the option.
#include "kvo/studies/diversity.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/model/generate.hpp"
#include "model_fixture.hpp"
#include "test_support.hpp"

using namespace kvo;

TEST(Diversity, WordStatisticsOfKnownTexts) {
  const auto d = studies::text_diversity("The cat, the CAT. the cat sat");
  EXPECT_EQ(d.words, 7);  // the cat the cat the cat sat
  EXPECT_NEAR(d.distinct1, 3.0 / 7.0, 1e-12);
  EXPECT_NEAR(d.distinct2, 3.0 / 6.0, 1e-12);          // the-cat, cat-the, cat-sat
  EXPECT_NEAR(d.repetition4, 1.0 - 3.0 / 4.0, 1e-12);  // the-cat-the-cat twice, cat-the-cat-sat, cat-the-cat-the
  const auto fresh = studies::text_diversity("one two three four five");
  EXPECT_DOUBLE_EQ(fresh.distinct2, 1.0);
  EXPECT_DOUBLE_EQ(fresh.repetition4, 0.0);
  EXPECT_EQ(studies::text_diversity(" ... !! ").words, 0);
}

TEST(Diversity, FullCacheRowIsGreedyGenerationAndEveryRowIsThere) {
  const auto& m = test::tiny_model();
  studies::DiversityRequest r;
  r.prompts = 2;
  r.prompt_tokens = 24;
  r.new_tokens = 8;
  r.policies = {PolicyId::H2O, PolicyId::Window};
  r.budgets = {0.5, 1.0};
  long ticks = 0;
  r.on_token = [&] { ++ticks; };
  const std::string text = test::gpl3_text();
  const auto res = studies::continuation_diversity(m, text, r);
  EXPECT_EQ(ticks, studies::diversity_units(r));
  ASSERT_EQ(res.full.continuations.size(), 2u);
  const auto ids = m.tokenizer().encode(text);
  model::GenerateRequest g;
  g.max_tokens = 8;
  g.stop_at_eos = false;
  const auto first = model::generate(m, std::span<const int>(ids.data(), 24), g);
  EXPECT_EQ(res.full.continuations[0], first.text);
  ASSERT_EQ(res.rows.size(), 4u);
  EXPECT_EQ(res.rows[0].row, policy_name(PolicyId::H2O));
  EXPECT_EQ(res.rows[1].budget, 1.0);
  EXPECT_EQ(res.rows[1].continuations, res.full.continuations);  // a budget of everything evicts nothing
  const auto records = studies::diversity_paper_experiments(res);
  ASSERT_EQ(records.size(), 1u);  // h2o below the full budget
  EXPECT_EQ(records[0].id, "E10");
  const auto j = studies::diversity_result_json(res);
  EXPECT_EQ(j.at("rows").size(), 4u);
  EXPECT_EQ(j.at("paper_experiments").size(), 1u);
}

TEST(Diversity, RequestsAreRefusedNamingTheProblem) {
  studies::DiversityRequest r;
  r.policies = {PolicyId::Lookahead};
  EXPECT_NE(test::error_of([&] { r.validate(); }).find(policy_name(PolicyId::Lookahead)), std::string::npos);
  r.policies = {PolicyId::H2O};
  r.budgets = {1.5};
  EXPECT_NE(
      test::error_of([&] { r.validate(); }).find("a budget is a share of the tokens in (0, 1] (20% or 0.2), not 1.5"),
      std::string::npos);
  studies::DiversityRequest::schema().set(r, "budgets", "20%,64");  // a token count is no share
  EXPECT_EQ(r.budgets, (std::vector<double>{0.2, 64.0}));
  EXPECT_THROW(r.validate(), Error);
  r.budgets = {0.2};
  studies::DiversityRequest::schema().set(r, "history", "0");  // a policy parameter out of range
  EXPECT_NE(test::error_of([&] { r.validate(); }).find("history must be >= 1"), std::string::npos);
  r.run.history = 32;
  EXPECT_EQ(studies::DiversityRequest::from_json(r.to_json()).to_json(), r.to_json());
  r.budgets = {0.2};
  r.new_tokens = 0;
  EXPECT_THROW(r.validate(), Error);
}
