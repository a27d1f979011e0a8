// The attention search (studies/worst_case.hpp): it finds a planted bad instance that random starts
// miss, it is reproducible from its seed, its saved instance gives the same ratio when read back and
// passes verify, and bad requests are refused in one line naming the field.
#include "kvo/studies/worst_case.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "test_support.hpp"

using namespace kvo;
using namespace kvo::studies;

namespace {

AttentionSearchRequest small_attention_request(PolicyId policy) {
  AttentionSearchRequest r;
  r.policies = {policy};
  r.tokens = 16;
  r.head_dim = 4;
  r.radius = 3.0;
  r.evaluations = 600;
  r.restarts = 2;
  r.run.budget = "4";
  return r;
}

// Every query points at key 0 (logit R^2/sqrt(d)) and no other key: a policy that keeps only the
// newest tokens loses almost all of the attention once key 0 leaves its window.
double planted_window_ratio(const AttentionSearchRequest& r) {
  const int n = r.tokens, d = r.head_dim;
  std::vector<float> q(static_cast<size_t>(n) * d, 0.f), k(q.size(), 0.f);
  for (int i = 0; i < n; ++i) q[static_cast<size_t>(i) * d] = static_cast<float>(r.radius);
  k[0] = static_cast<float>(r.radius);
  for (int j = 1; j < n; ++j) k[static_cast<size_t>(j) * d + 1 + j % (d - 1)] = static_cast<float>(r.radius);
  return instance_ratios(attention_instance(q, k, n, d), PolicyId::Window, r.run).opt_dyn;
}

}  // namespace

TEST(AttentionSearch, FindsAPlantedBadInstanceThatRandomStartsMiss) {
  const AttentionSearchRequest r = small_attention_request(PolicyId::Window);
  const double planted = planted_window_ratio(r);
  const AttentionSearchResult res = search_attention(r);
  const PolicySearch& p = res.policies.front();
  EXPECT_LT(planted, 0.45);
  EXPECT_GT(p.random_worst, planted + 0.2);  // the random starts are far from it
  EXPECT_LE(p.worst, planted * 1.05);        // the search reaches it
  EXPECT_EQ(p.worst, p.opt_dyn_ratio);
  // The curve falls monotonically and ends at the last evaluation.
  for (size_t x = 1; x < p.curve.size(); ++x) EXPECT_LE(p.curve[x].worst, p.curve[x - 1].worst);
  EXPECT_EQ(p.curve.back().evaluation, r.evaluations);
}

TEST(AttentionSearch, IsReproducibleAndItsSavedInstanceVerifies) {
  AttentionSearchRequest r = small_attention_request(PolicyId::H2O);
  r.evaluations = 120;
  r.policies = {PolicyId::H2O, PolicyId::Tova};
  r.out = test::fresh_dir("AttentionSearch", "saved").string();
  long ticks = 0;
  const AttentionSearchResult a = search_attention(r, [&] { ++ticks; });
  EXPECT_EQ(ticks, 2 * 120);
  const AttentionSearchResult b = search_attention(r);
  ASSERT_EQ(a.policies.size(), 2u);
  for (size_t x = 0; x < 2; ++x) {
    EXPECT_EQ(a.policies[x].worst, b.policies[x].worst);
    EXPECT_EQ(a.policies[x].verified, a.policies[x].worst);  // read back from the file, bit for bit
    EXPECT_EQ(a.policies[x].theorem_failures, 0);
    EXPECT_LE(a.policies[x].worst, a.policies[x].random_worst);
    EXPECT_LE(a.policies[x].opt_dyn_ratio, 1.0 + 1e-12);
    EXPECT_LE(a.policies[x].per_step_ratio, a.policies[x].opt_dyn_ratio + 1e-12);  // OPT_dyn <= sum opt_i
  }
  r.run.seed = 5;
  EXPECT_NE(search_attention(r).policies[0].worst, a.policies[0].worst);
  EXPECT_NE(a.report().text().find("(the same)"), std::string::npos);
  EXPECT_NE(a.plot_svg().find("<polyline"), std::string::npos);
  EXPECT_EQ(a.to_json().at("policies").at(0).at("policy"), "h2o");
}

TEST(AttentionSearch, RefusesBadRequestsNamingTheField) {
  auto refuse = [](const std::function<void(AttentionSearchRequest&)>& edit, const std::string& part) {
    AttentionSearchRequest r = small_attention_request(PolicyId::H2O);
    edit(r);
    test::expect_refusal([&] { r.validate(); }, part);
  };
  refuse([](auto& r) { r.tokens = 3; }, "tokens: 3 is below 4");
  refuse([](auto& r) { r.radius = 0; }, "radius: 0 is not a positive number");
  refuse([](auto& r) { r.evaluations = 1; }, "evaluations: 1 is below restarts (2)");
  refuse([](auto& r) { r.against = "opt"; }, "against: 'opt' is neither opt_dyn nor per_step");
  refuse([](auto& r) { r.run.budget = "16"; }, "keeps all 16 tokens of h2o");
  refuse([](auto& r) { r.policies.clear(); }, "policies: none");
}
