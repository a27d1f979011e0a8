// `score` as a library call (gpu/score_run.hpp): the request refuses what the scorer cannot run
// naming the option, resolves against a trace, round-trips as JSON, and its views (per-step
// records, per-budget summary) read the result.
#include "kvo/gpu/score_run.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "test_support.hpp"

using namespace kvo;
using test::error_of;

TEST(ScoreRun, RequestsAreValidatedNamingTheOptionAndRoundTripAsJson) {
  ScoreRequest req;
  req.policy = PolicyId::Tova;
  EXPECT_NE(error_of([&] { req.validate(); }).find("the greedy scorer replays"), std::string::npos);
  req = {};
  req.run.gqa = "kv-max";
  EXPECT_NE(error_of([&] { req.validate(); }).find("gqa must be query"), std::string::npos);
  req = {};
  req.device = "gpu";
  EXPECT_NE(error_of([&] { req.validate(); }).find("unknown device 'gpu'"), std::string::npos);
  req = {};
  req.budgets = {"10%", "x"};
  EXPECT_NE(error_of([&] { req.validate(); }).find("'x'"), std::string::npos);
  req = {};
  req.policy = PolicyId::H2OPaper;
  req.budgets = {"25%", "6"};
  req.device = "auto";
  const ScoreRequest back = ScoreRequest::from_json(req.to_json());
  EXPECT_EQ(back.to_json(), req.to_json());
  EXPECT_EQ(back.budget_labels(), req.budgets);
  EXPECT_EQ(ScoreRequest{}.budget_labels(), std::vector<std::string>{"20%"});
  EXPECT_NE(error_of([] {
              ScoreRequest::from_json({{"budget", "6"}});
            }).find("score request: unknown field 'budget'"),
            std::string::npos);
}

TEST(ScoreRun, TheViewsReadTheResult) {
  const Trace tr = test::synthetic_layer(2, 1, 16, 16, 0, 3);
  ScoreRequest req;
  req.budgets = {"25%", "6"};
  const ScorerOptions o = req.options(tr);
  const std::vector<Budget> budgets = o.budgets();
  const ScorerResult r = run_scorer(tr, o);
  ASSERT_EQ(r.units.size(), 4u);
  const auto summary = score_summary(r, budgets);
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(summary[1].budget, "6");
  EXPECT_EQ(summary[1].k, 6);
  EXPECT_EQ(summary[1].heads, 2);
  EXPECT_EQ(summary[1].evictions, 2 * (16 - 6));  // a nested policy at a full cache evicts once a step
  std::ostringstream lines;
  write_score_records(lines, tr, r, budgets);
  std::istringstream in(lines.str());
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const ScorerUnit& u = r.units[static_cast<size_t>(count / 16)];
    EXPECT_EQ(j["kept"], kept_after(u, count % 16));
    ++count;
  }
  EXPECT_EQ(count, 4 * 16);
}
