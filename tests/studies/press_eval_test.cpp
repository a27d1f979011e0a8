// Prefill compression in closed loop (studies/press_eval.hpp): a pruned KV cache with per-head start
// rows and shifted positions gives the logits of the evicting decoder holding the same keys; at
// compression ratio 0 every row (press, policy or reference) is the full cache; the references sit
// where they must.
#include "kvo/studies/press_eval.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "kvo/core/error.hpp"
#include "kvo/core/policies.hpp"
#include "kvo/model/evicting_decoder.hpp"
#include "model_fixture.hpp"

using namespace kvo;

namespace {

// Kept prompt positions of (layer, KV head): a different subset and count per head (periods 3, 4
// and 5 across a layer's heads), as a shared budget keeps.
std::vector<int> kept_of(int layer, int kv, int P) {
  std::vector<int> s;
  const int period = 3 + (layer + kv) % 3;
  for (int j = 0; j < P; ++j)
    if ((j + layer + kv) % period != 0) s.push_back(j);
  return s;
}

}  // namespace

TEST(PressEval, APrunedCacheEqualsTheEvictingDecoderHoldingTheSameKeys) {
  const auto& m = test::tiny_model();
  const auto& c = m.config();
  const int n = 36, P = 24;
  const auto ids = test::gpl3_tokens(n);
  // Path 1: the prompt prefilled at once, cut by compressed_cache (each head's kept rows packed,
  // positions continuing at P), the continuation in one forward call.
  auto prompt = m.new_cache(P);
  m.forward(std::span<const int>(ids).first(P), prompt, false);
  std::vector<std::vector<int>> kept;
  for (int l = 0; l < c.n_layers; ++l)
    for (int kv = 0; kv < c.n_kv_heads; ++kv) kept.push_back(kept_of(l, kv, P));
  auto pruned = studies::compressed_cache(m, prompt, kept, P, n - P - 1);
  const model::MatrixRM batch = m.forward(std::span<const int>(ids).subspan(P, n - P - 1), pruned);
  // Path 2: token by token through the evicting decoder; each unit's schedule drops the other
  // prompt keys right after the last prompt query, as a prefill press does.
  CacheManagerOptions o;
  o.run.budget = Budget(Amount::parse("100%"));
  o.n_layers = c.n_layers;
  o.n_kv_heads = c.n_kv_heads;
  o.max_len = n;
  KvEvictionManager mgr(o, [&](int, int layer, int kv) {
    std::vector<int> end(static_cast<size_t>(n), n - 1);
    const auto s = kept_of(layer, kv, P);
    for (int j = 0; j < P; ++j)
      if (!std::binary_search(s.begin(), s.end(), j)) end[static_cast<size_t>(j)] = P - 2;
    return std::make_unique<ScheduledPolicy>("kept-set", std::move(end));
  });
  model::EvictingDecoder dec(m, mgr, n + 1);
  for (int t = 0; t + 1 < n; ++t) {
    const Eigen::RowVectorXf one = dec.step(ids[static_cast<size_t>(t)]);
    if (t < P) continue;
    const float scale = batch.row(t - P).cwiseAbs().maxCoeff();
    EXPECT_LT((one - batch.row(t - P)).cwiseAbs().maxCoeff(), 1e-4f * scale) << t;
  }
  const int last = c.n_kv_heads - 1;
  EXPECT_EQ(mgr.held(0, 1, last).size(), kept_of(1, last, P).size() + (n - 1 - P));
}

TEST(PressEval, RatioZeroIsTheFullCacheAndTheReferencesAreWhereTheyMustBe) {
  const auto& m = test::tiny_model();
  studies::PressEvalOptions o;
  o.tokens = 48;
  o.prompt_len = 32;
  for (PressId id : {PressId::Knorm, PressId::Tova})
    for (double r : {0.0, 0.5}) {
      PressOptions p;
      p.id = id;
      p.compression_ratio = r;
      o.presses.push_back(p);
    }
  o.reference_ratios = {0.0, 0.5};
  o.policies = {PolicyId::H2O};
  o.policy_ratios = {0.0, 0.5};
  int calls = 0;
  o.on_row = [&] { ++calls; };
  const studies::PressEvalResult res = studies::evaluate_presses(m, test::gpl3_text(), o);
  ASSERT_EQ(res.rows.size(), 10u);
  EXPECT_EQ(calls, 10);
  EXPECT_TRUE(std::isfinite(res.full_nll));
  for (const studies::PressEvalRow& r : res.rows) {
    EXPECT_GE(r.mean_kl, 0.0) << r.name;
    EXPECT_LE(r.mass_fraction, 1 + 1e-12) << r.name;
    if (r.compression_ratio == 0.0) {  // nothing dropped: the full cache's numbers, bit for bit
      EXPECT_EQ(r.nll, res.full_nll) << r.name;
      EXPECT_EQ(r.mean_kl, 0.0) << r.name;
      EXPECT_NEAR(r.output_error, 0.0, 1e-12) << r.name;  // the renormalisation rounds
      EXPECT_EQ(r.kv_bytes, res.full_bytes) << r.name;
    } else {
      EXPECT_NEAR(r.mean_k, 16.0, 1e-9) << r.name;
      EXPECT_LT(r.kv_bytes, res.full_bytes) << r.name;
      EXPECT_GT(r.mean_kl, 0.0) << r.name;
    }
    if (r.set == studies::PressEvalSet::MassOptimum) {
      EXPECT_NEAR(r.mass_fraction, 1.0, 1e-12);
    }
  }
}

TEST(PressEval, RefusesPromptsWithoutAContinuation) {
  const auto& m = test::tiny_model();
  studies::PressEvalOptions o;
  o.tokens = 40;
  o.reference_ratios = {0.5};
  for (int P : {0, 39, 40}) {
    o.prompt_len = P;
    EXPECT_THROW(studies::evaluate_presses(m, test::gpl3_text(), o), Error) << P;
  }
  o.prompt_len = 20;
  o.reference_ratios = {1.0};
  EXPECT_THROW(studies::evaluate_presses(m, test::gpl3_text(), o), Error);
  o.reference_ratios = {0.5};
  o.policies = {PolicyId::Oracle};  // an offline schedule is not a prefill press
  o.policy_ratios = {0.5};
  EXPECT_THROW(studies::evaluate_presses(m, test::gpl3_text(), o), Error);
}

// Issue 30: a press and a policy of one name are two rows with two labels, every policy row keeps
// kvpress's k (h2o-mask kept k - 1), and full at a ratio above 0 is refused.
TEST(PressEval, APressAndAPolicyOfOneNameAreTwoLabelledRowsAndPoliciesKeepKvpressCount) {
  const auto& m = test::tiny_model();
  studies::PressEvalOptions o;
  o.tokens = 48;
  o.prompt_len = 32;
  PressOptions p;
  p.id = PressId::Tova;
  p.compression_ratio = 0.5;
  o.presses.push_back(p);
  o.policies = {PolicyId::Tova, PolicyId::H2OMask};
  o.policy_ratios = {0.5};
  o.reference_ratios = {};
  const studies::PressEvalResult res = studies::evaluate_presses(m, test::gpl3_text(), o);
  ASSERT_EQ(res.rows.size(), 3u);
  EXPECT_EQ(res.rows[0].name, "press:" + press_name(PressId::Tova));
  EXPECT_EQ(res.rows[1].name, "policy:" + policy_name(PolicyId::Tova));
  EXPECT_EQ(res.rows[2].name, policy_name(PolicyId::H2OMask));
  for (const auto& r : res.rows) EXPECT_NEAR(r.mean_k, 16.0, 1e-9) << r.name;  // press_n_kept(32, 0.5)
  o.presses.clear();
  o.policies = {PolicyId::Full};
  EXPECT_THROW(studies::evaluate_presses(m, test::gpl3_text(), o), Error);
}

// Issue 33: the shared-budget optima and AdaKV in closed loop. Each scope's row keeps the same total
// (the same K/V bytes) with counts that differ per unit, keeps at least the per-head optimum's mass
// (the model scope the most), and at ratio 0 is the full cache; AdaKV rows follow their press.
TEST(PressEval, SharedBudgetOptimaAndAdaKVRowsKeepTheSameTotal) {
  const auto& m = test::tiny_model();
  studies::PressEvalOptions o;
  o.tokens = 48;
  o.prompt_len = 32;
  PressOptions p;
  p.id = PressId::Knorm;
  for (double r : {0.0, 0.75}) {
    p.compression_ratio = r;
    o.presses.push_back(p);
  }
  o.alpha_safeguard = {0.0, 0.5};
  o.reference_ratios = {0.0, 0.75};
  o.reference_scopes = {BudgetScope::Head, BudgetScope::Layer, BudgetScope::Model};
  EXPECT_EQ(studies::press_eval_rows(o), 2 * 3 + 2 * 4);
  const studies::PressEvalResult res = studies::evaluate_presses(m, test::gpl3_text(), o);
  ASSERT_EQ(res.rows.size(), 14u);
  std::map<std::pair<std::string, double>, studies::PressEvalRow> rows;
  for (const auto& r : res.rows) rows[{r.name, r.compression_ratio}] = r;
  const auto by = [&](const std::string& name, double ratio) { return rows.at({name, ratio}); };
  for (const char* name : {"knorm", "adakv(knorm, 0)", "adakv(knorm, 0.5)", "optimum", "optimum@layer", "optimum@model",
                           "optimum_output_bound"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(rows.count({name, 0.0}) && rows.count({name, 0.75}));
    const auto full = by(name, 0.0);
    EXPECT_EQ(full.nll, res.full_nll);
    EXPECT_EQ(full.kv_bytes, res.full_bytes);
    const auto cut = by(name, 0.75);
    EXPECT_NEAR(cut.mean_k, 8.0, 1e-9);  // press_n_kept(32, 0.75): the same total in every row
    EXPECT_EQ(cut.kv_bytes, by("knorm", 0.75).kv_bytes);
    EXPECT_GT(cut.mean_kl, 0.0);
  }
  const double head = by("optimum", 0.75).mass_share, layer = by("optimum@layer", 0.75).mass_share,
               model_scope = by("optimum@model", 0.75).mass_share;
  EXPECT_LE(head, layer + 1e-12);
  EXPECT_LE(layer, model_scope + 1e-12);
  EXPECT_GT(model_scope, head);  // the global allocation moves slots on this text
  EXPECT_LE(by("knorm", 0.75).mass_share, head + 1e-12);
  EXPECT_EQ(by("optimum@model", 0.75).scope, BudgetScope::Model);
  EXPECT_EQ(by("adakv(knorm, 0.5)", 0.75).set, studies::PressEvalSet::AdaKV);
}
