// The records of the paper's closed-loop experiments: one per claim and budget with every row
// present, none without, the loss's direction per metric, and refusals in one line.
#include "kvo/proofs_check/paper_experiments.hpp"

#include <gtest/gtest.h>

#include <map>

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
