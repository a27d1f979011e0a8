// The hypothesis search (studies/hypothesis_search.hpp): it measures a planted trace as verify's C15
// does, walks from random starts (which never satisfy the hypotheses) into traces that do and finds
// one on which a policy the theorem does not cover falls below the bound, reproducibly from its seed;
// its saved instance reads back to the same value and passes verify; bad requests are refused.
#include "kvo/studies/hypothesis_search.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "test_support.hpp"

using namespace kvo;
using namespace kvo::studies;

namespace {

HypothesisSearchRequest small_hypothesis_request(PolicyId policy) {
  HypothesisSearchRequest r;
  r.policies = {policy};
  r.tokens = 12;
  r.logit_range = 12.0;
  r.evaluations = 400;
  r.restarts = 2;
  r.run.budget = "4";
  r.run.prompt_len = 8;
  return r;
}

// Queries 0..7 look at keys 0..3, later queries at themselves: the first four keys are the heavy
// hitters and stay so, the optimum stops growing (gamma ~ 0), and a window of the newest tokens
// keeps almost none of it.
std::vector<double> planted_logits(int n, double B) {
  std::vector<double> l(static_cast<size_t>(n) * n, -B);
  for (int i = 0; i < n; ++i) {
    if (i < 8) {
      for (int j = 0; j <= std::min(i, 3); ++j) l[static_cast<size_t>(i) * n + j] = B;
    } else {
      l[static_cast<size_t>(i) * n + i] = B;
    }
  }
  return l;
}

}  // namespace

TEST(HypothesisSearch, MeasuresAPlantedTraceAsVerifyDoes) {
  const HypothesisSearchRequest r = small_hypothesis_request(PolicyId::Window);
  const RunOptions& run = r.run;
  const Trace t = logit_instance(planted_logits(r.tokens, r.logit_range), r.tokens);
  const HypothesisMeasure window = measure_hypotheses(t, PolicyId::Window, run);
  EXPECT_TRUE(window.hypotheses_hold);
  EXPECT_LT(window.alpha, 1e-3);
  EXPECT_LT(window.tightness(), 0.1);
  // The greedy the theorem covers (on A, dense-acc) keeps the four heavy hitters: the bound holds
  // with room (rho = 1).
  const HypothesisMeasure greedy = measure_hypotheses(t, PolicyId::Greedy, run);
  EXPECT_TRUE(greedy.hypotheses_hold);
  EXPECT_NEAR(greedy.rho_min, 1.0, 1e-9);
  EXPECT_GT(greedy.tightness(), 1.5);
  EXPECT_NEAR(greedy.bound, (1 - greedy.alpha) * (1 - 1 / std::exp(1.0)), 1e-15);
  // Algorithm 2 scores its own cache: after the prompt the heavy hitters' renormalised scores start
  // from nothing, each new token takes its own row's mass and the four are evicted one by one, so
  // it keeps half of the optimum, below the bound, on a trace where A's hypotheses hold.
  const HypothesisMeasure paper = measure_hypotheses(t, PolicyId::H2OPaper, run);
  EXPECT_NEAR(paper.rho_min, 0.5, 1e-6);
  EXPECT_LT(paper.tightness(), 0.8);
  // Uniform attention grows the optimum every step: the hypotheses fail.
  const Trace uniform = logit_instance(std::vector<double>(static_cast<size_t>(r.tokens) * r.tokens, 0.0), r.tokens);
  EXPECT_FALSE(measure_hypotheses(uniform, PolicyId::H2OPaper, r.run).hypotheses_hold);
}

TEST(HypothesisSearch, WalksIntoTheHypothesesAndBelowTheBound) {
  HypothesisSearchRequest r = small_hypothesis_request(PolicyId::Window);
  const HypothesisSearchResult res = search_hypotheses(r);
  const HypothesisSearch& p = res.policies.front();
  ASSERT_TRUE(p.found);
  EXPECT_FALSE(std::isfinite(p.random_worst));  // no random start satisfies the hypotheses
  EXPECT_LT(p.alpha, 1.0);
  EXPECT_LT(p.worst, 0.5);  // window is not the theorem's greedy: it falls well below the bound
  EXPECT_DOUBLE_EQ(p.worst, p.rho_min / p.bound);
  for (size_t x = 1; x < p.curve.size(); ++x) EXPECT_LE(p.curve[x].worst, p.curve[x - 1].worst);
  EXPECT_EQ(p.curve.back().evaluation, r.evaluations);
}

TEST(HypothesisSearch, IsReproducibleAndItsSavedInstanceVerifies) {
  HypothesisSearchRequest r = small_hypothesis_request(PolicyId::Greedy);
  r.policies = {PolicyId::Greedy, PolicyId::H2OPaper};
  r.evaluations = 2000;
  r.out = test::fresh_dir("HypothesisSearch", "saved").string();
  long ticks = 0;
  const HypothesisSearchResult a = search_hypotheses(r, [&] { ++ticks; });
  EXPECT_EQ(ticks, 2 * 2000);
  const HypothesisSearchResult b = search_hypotheses(r);
  for (size_t x = 0; x < 2; ++x) {
    ASSERT_TRUE(a.policies[x].found) << a.policies[x].policy;
    EXPECT_EQ(a.policies[x].worst, b.policies[x].worst);
    EXPECT_EQ(a.policies[x].verified, a.policies[x].worst);
    EXPECT_EQ(a.policies[x].theorem_failures, 0);
  }
  EXPECT_GE(a.policies[0].worst, 1.0);  // the greedy the theorem covers stays above its bound here,
  EXPECT_LT(a.policies[1].worst, 1.0);  // Algorithm 2, which A's hypotheses do not cover, falls below
  EXPECT_NE(a.report().text().find("(the same)"), std::string::npos);
  EXPECT_NE(a.plot_svg().find("<polyline"), std::string::npos);
  EXPECT_EQ(a.to_json().at("policies").at(0).at("policy"), "greedy");
}

TEST(HypothesisSearch, RefusesBadRequestsNamingTheField) {
  auto refuse = [](const std::function<void(HypothesisSearchRequest&)>& edit, const std::string& part) {
    HypothesisSearchRequest r = small_hypothesis_request(PolicyId::H2O);
    edit(r);
    test::expect_refusal([&] { r.validate(); }, part);
  };
  refuse([](auto& r) { r.tokens = 3; }, "tokens: 3 is below 4");
  refuse([](auto& r) { r.logit_range = -1; }, "logit_range: -1 is not a positive number");
  refuse([](auto& r) { r.evaluations = 1; }, "evaluations: 1 is below restarts (2)");
  refuse([](auto& r) { r.run.budget = "12"; }, "keeps all 12 tokens of h2o");
  refuse([](auto& r) { r.policies.clear(); }, "policies: none");
}
