// The records of the paper's closed-loop experiments: one per claim and budget with every row
// present, none without, the loss's direction per metric, and refusals in one line.
#include "kvo/proofs_check/paper_experiments.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"

using namespace kvo;

TEST(PaperExperiments, OneRecordPerClaimAndBudgetWhoseRowsArePresent) {
  LoopMeasurements m;
  m.full = 10.0;
  for (double b : {0.1, 0.2})
    for (PolicyId row : {PolicyId::H2O, PolicyId::Lookahead, PolicyId::Window, PolicyId::Heavy, PolicyId::Strided,
                         PolicyId::StridedH2O})
      m.rows.push_back({policy_name(row), b, 11.0});
  m.rows.push_back({policy_name(PolicyId::AntiH2O), 0.2, 30.0});  // E4 needs random too: no record
  const auto rs = paper_experiment_records(m);
  std::map<std::string, int> count;
  for (const auto& r : rs) {
    ++count[r.id + " " + r.variant];
    EXPECT_EQ(r.kind, ClaimKind::Finding);
    EXPECT_EQ(r.layer, -1);
  }
  EXPECT_EQ(count,
            (std::map<std::string, int>{{"E5 perplexity", 2}, {"E6 strided, perplexity", 2}, {"E9 perplexity", 2}}));
  EXPECT_EQ(rs.front().id, "E5");  // claim order, then budget
  EXPECT_EQ(rs.front().detail.at("budget_label"), "10%");
}

TEST(PaperExperiments, LossFollowsTheMetricsDirection) {
  LoopMeasurements ppl;
  ppl.full = 20.0;
  EXPECT_NEAR(loop_loss(ppl, 25.0), 0.25, 1e-15);
  LoopMeasurements acc;
  acc.metric = LoopMetric::Accuracy;
  acc.full = 0.75;
  EXPECT_NEAR(loop_loss(acc, 0.5), 0.25, 1e-15);
}

TEST(PaperExperiments, RefusesANonPositiveFullPerplexityOrANegativeTolerance) {
  LoopMeasurements m;
  m.full = 0.0;
  EXPECT_THROW(paper_experiment_records(m), Error);
  m.full = 10.0;
  m.tolerance = -0.1;
  EXPECT_THROW(paper_experiment_records(m), Error);
}

TEST(PaperExperiments, PairedOutcomesAddTheSignTestOfEachComparisonTheClaimMakes) {
  LoopMeasurements m;
  m.metric = LoopMetric::Accuracy;
  m.full = 0.8;
  for (PolicyId row : {PolicyId::AntiH2O, PolicyId::Random, PolicyId::Heavy, PolicyId::Window, PolicyId::H2O})
    m.rows.push_back({policy_name(row), 0.2, 0.3});
  std::vector<std::string> asked;
  m.paired = [&](const std::string& row, double budget, const std::string& against,
                 double against_budget) -> std::optional<PairedTest> {
    asked.push_back(row + "@" + std::to_string(budget) + " vs " + against + "@" + std::to_string(against_budget));
    if (against == policy_name(PolicyId::Window)) return std::nullopt;  // no shared instance: left out
    return PairedTest{.instances = 40, .better = 3, .worse = 9, .p_value = 0.146};
  };
  const auto rs = paper_experiment_records(m);
  ASSERT_EQ(rs.size(), 2u);  // E4 and E9 at 20%
  const std::string full(kLoopFullRow), anti = policy_name(PolicyId::AntiH2O), rnd = policy_name(PolicyId::Random);
  const nlohmann::json& e4 = rs[0].detail.at("paired");
  ASSERT_EQ(e4.size(), 1u);
  EXPECT_EQ(e4[0].at("row"), anti);
  EXPECT_EQ(e4[0].at("against"), rnd);
  EXPECT_EQ(e4[0].at("better"), 3);
  EXPECT_EQ(e4[0].at("worse"), 9);
  EXPECT_EQ(e4[0].at("instances"), 40);
  EXPECT_DOUBLE_EQ(e4[0].at("p_value").get<double>(), 0.146);
  // E9: each row against the full cache (at budget 1), heavy against window, then h2o against each
  // alone; the two against window found no pairs.
  const nlohmann::json& e9 = rs[1].detail.at("paired");
  ASSERT_EQ(e9.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(e9[i].at("against"), full);
  EXPECT_EQ(e9[3].at("row"), policy_name(PolicyId::H2O));
  EXPECT_EQ(e9[3].at("against"), policy_name(PolicyId::Heavy));
  const auto at = [](PolicyId p, double b) { return policy_name(p) + "@" + std::to_string(b); };
  ASSERT_EQ(asked.size(), 7u);  // E4's one, E9's six
  EXPECT_EQ(asked[4], at(PolicyId::Heavy, 0.2) + " vs " + at(PolicyId::Window, 0.2));
  EXPECT_EQ(asked.back(), at(PolicyId::H2O, 0.2) + " vs " + at(PolicyId::Window, 0.2));
  EXPECT_EQ(asked[1], at(PolicyId::Heavy, 0.2) + " vs " + full + "@" + std::to_string(1.0));
  // Without a comparator (perplexity) the records have no "paired".
  m.paired = nullptr;
  for (const auto& r : paper_experiment_records(m)) EXPECT_FALSE(r.detail.contains("paired"));
}
