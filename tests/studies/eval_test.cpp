// Perplexity under eviction in closed loop (kvo/studies/eval.hpp), on the tiny test model: the full
// budget is the full cache, every point is finite with real eviction's memory, and quantized K/V
// points sit beside their fp32 twins with E8's record.
#include "kvo/studies/eval.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/model/perplexity.hpp"
#include "kvo/studies/eval_run.hpp"
#include "model_fixture.hpp"

using namespace kvo;

TEST(Eval, FullBudgetIsTheFullCacheAndEveryPointIsSane) {
  const auto& m = test::tiny_model();
  const std::string text = test::gpl3_text();
  studies::EvalOptions o;
  o.tokens = 24;
  o.policies = kvo::parse_policy_list("h2o,window,oracle");
  o.budgets = {Amount::parse("6"), Amount::parse("100%")};
  long ticks = 0;
  o.on_token = [&] { ++ticks; };
  const studies::EvalResult r = studies::evaluate_policies(m, text, o);
  EXPECT_EQ(ticks, studies::eval_units(o));
  const auto ids = test::gpl3_tokens(24);
  EXPECT_NEAR(std::log(r.full_ppl), model::mean_nll(m, ids), 1e-6);
  ASSERT_EQ(r.points.size(), 6u);
  const size_t row =
      static_cast<size_t>(m.config().head_dim) * 2 * sizeof(float) * m.config().n_layers * m.config().n_kv_heads;
  for (const auto& p : r.points) {
    EXPECT_TRUE(std::isfinite(p.ppl)) << p.policy;
    EXPECT_GE(p.mean_kl, 0.0);
    if (p.k >= 24) {
      EXPECT_EQ(p.ppl, r.full_ppl);
      EXPECT_EQ(p.mean_kl, 0.0);
    } else {
      EXPECT_EQ(p.peak_bytes, 6 * row) << p.policy;  // real eviction: 6 rows per pool
      EXPECT_GT(p.mean_kl, 0.0) << p.policy;
    }
  }
  EXPECT_THROW(kvo::parse_policy_list("no-such-policy"), kvo::Error);
}

// --kv-bits: every point beside its quantized twin, and the full cache quantized; 8 bits barely move
// the perplexity, 2 bits move it more, and E8's record judges the h2o pair.
TEST(Eval, QuantizedKvPointsSitBesideTheirFp32Twins) {
  const auto& m = test::tiny_model();
  const std::string text = test::gpl3_text();
  studies::EvalOptions o;
  o.tokens = 24;
  o.policies = {PolicyId::H2O};
  o.budgets = {Amount::parse("8")};
  double moved[2] = {0, 0};
  for (int x = 0; x < 2; ++x) {
    o.kv = {x == 0 ? 8 : 2, 64};
    long ticks = 0;
    o.on_token = [&] { ++ticks; };
    const studies::EvalResult r = studies::evaluate_policies(m, text, o);
    EXPECT_EQ(ticks, studies::eval_units(o));
    ASSERT_EQ(r.points.size(), 3u);
    const std::string suffix = x == 0 ? "+int8" : "+int2";
    const std::string full = policy_name(PolicyId::Full), h2o = policy_name(PolicyId::H2O);
    EXPECT_EQ(r.points[0].policy, full + suffix);
    EXPECT_EQ(r.points[1].policy, h2o);
    EXPECT_EQ(r.points[2].policy, h2o + suffix);
    EXPECT_EQ(r.points[2].k, 8);
    moved[x] = std::abs(std::log(r.points[0].ppl / r.full_ppl));
    const auto records = studies::eval_paper_experiments(r);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].id, "E8");
    EXPECT_EQ(records[0].detail.at(full + suffix).get<double>(), r.points[0].ppl);
  }
  EXPECT_LT(moved[0], 0.02);
  EXPECT_GT(moved[1], moved[0]);
}
