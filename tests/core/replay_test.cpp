#include "kvo/core/replay.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

TEST(Replay, RetainedMassEqualsDenseAttentionOverTheAttendedSet) {
  const Trace tr = random_trace(2, 2, 1, 40, 8, 41, 0.5);
  ReplayOptions o;
  o.run.policy = PolicySpec::named("h2o");
  o.run.budget = Budget(Amount::parse("7"));
  const auto r = replay(tr, o);
  for (const auto& h : r.heads) {
    const Eigen::MatrixXd a = dense_attention(HeadView(tr, h.layer, h.head));
    for (int i = 0; i < 40; ++i) {
      double m = 0;
      for (int j : h.steps[i].attended) m += a(i, j);
      EXPECT_NEAR(h.steps[i].retained_mass, m, 1e-12);
    }
  }
}

TEST(Replay, ProbabilitiesAreRenormalisedOverTheAttendedSet) {
  const Trace tr = random_trace(1, 1, 1, 30, 8, 42);
  ReplayOptions o;
  o.run.policy = PolicySpec::named("tova");
  o.run.budget = Budget(Amount::parse("5"));
  o.record_probs = true;
  const auto r = replay(tr, o);
  const HeadView hv(tr, 0, 0);
  for (int i = 0; i < 30; ++i) {
    const auto& s = r.heads[0].steps[i];
    double sum = 0;
    for (double p : s.probs) sum += p;
    EXPECT_NEAR(sum, 1.0, 1e-12);
    // Zero-filled-row formula (D.10 after the -1 fix) equals the gather formula.
    double d = 0;
    std::vector<double> lg(s.attended.size());
    hv.logits(i, s.attended, lg);
    for (double x : lg) d += std::exp(x);
    for (size_t t = 0; t < lg.size(); ++t) EXPECT_NEAR(s.probs[t], std::exp(lg[t]) / d, 1e-12);
  }
}

TEST(Replay, DeterministicAcrossThreadCounts) {
  const Trace tr = random_trace(2, 4, 2, 40, 8, 43);
  ReplayOptions o;
  o.run.policy = PolicySpec::named("random");
  o.run.budget = Budget(Amount::parse("0.25"));
  o.threads = 1;
  const auto a = replay(tr, o);
  o.threads = 3;
  const auto b = replay(tr, o);
  for (size_t x = 0; x < a.heads.size(); ++x)
    for (int i = 0; i < 40; ++i) ASSERT_EQ(a.heads[x].steps[i].kept, b.heads[x].steps[i].kept);
}

// What `kvoracle replay` over MPI ranks relies on: units computed alone, in any order, sent as bytes
// and assembled give replay()'s result bit for bit.
TEST(Replay, UnitsThroughBytesAssembleIntoTheSameResult) {
  const Trace tr = random_trace(2, 4, 2, 40, 8, 44);
  for (const char* gqa : {"query", "kv-max"}) {
    ReplayOptions o;
    o.run.policy = PolicySpec::named("random");
    o.run.budget = Budget(Amount::parse("0.25"));
    o.run.gqa = parse_gqa(gqa);
    o.record_probs = true;
    const ReplayResult whole = replay(tr, o);
    const ReplayPlan plan(tr, o);
    std::vector<std::vector<HeadReplay>> units(static_cast<size_t>(plan.size()));
    for (int u = plan.size() - 1; u >= 0; --u) units[static_cast<size_t>(u)] = decode_heads(encode_heads(plan.run(u)));
    const ReplayResult parts = plan.assemble(std::move(units));
    ASSERT_EQ(parts.heads.size(), whole.heads.size()) << gqa;
    EXPECT_EQ(parts.policy, whole.policy);
    for (size_t x = 0; x < whole.heads.size(); ++x) {
      const HeadReplay &a = whole.heads[x], &b = parts.heads[x];
      EXPECT_EQ(std::tie(a.layer, a.head, a.evictions, a.reentries),
                std::tie(b.layer, b.head, b.evictions, b.reentries));
      EXPECT_EQ(a.mean_retained_mass, b.mean_retained_mass);
      ASSERT_EQ(a.steps.size(), b.steps.size());
      for (size_t i = 0; i < a.steps.size(); ++i) {
        EXPECT_EQ(a.steps[i].kept, b.steps[i].kept);
        EXPECT_EQ(a.steps[i].probs, b.steps[i].probs);
        EXPECT_EQ(a.steps[i].accumulated, b.steps[i].accumulated);
      }
    }
  }
  EXPECT_THROW(decode_heads("not cbor"), Error);
}

TEST(Replay, DenseOnlyTracesReplayLikeQKTraces) {
  Trace tr = random_trace(1, 2, 2, 30, 8, 44, 0.6);
  Trace dense = tr;
  for (int h = 0; h < 2; ++h) {
    const Eigen::MatrixXd a = dense_attention(HeadView(tr, 0, h));
    for (int i = 0; i < 30; ++i)
      for (int j = 0; j < 30; ++j) dense.attn[0].push_back(static_cast<float>(a(i, j)));
  }
  dense.q[0].clear();
  dense.k[0].clear();
  dense.v[0].clear();
  dense.head_dim = 0;
  ReplayOptions o;
  o.run.policy = PolicySpec::named("h2o");
  o.run.budget = Budget(Amount::parse("6"));
  const auto a = replay(tr, o), b = replay(dense, o);
  for (size_t x = 0; x < a.heads.size(); ++x)
    for (int i = 0; i < 30; ++i) {
      EXPECT_EQ(a.heads[x].steps[i].kept, b.heads[x].steps[i].kept);
      EXPECT_NEAR(a.heads[x].steps[i].retained_mass, b.heads[x].steps[i].retained_mass, 1e-5);
    }
}

TEST(Replay, BadOptionsAreErrors) {
  const Trace tr = random_trace(1, 1, 1, 20, 8, 45);
  ReplayOptions o;
  o.run.budget = Budget(Amount::parse("30"));
  EXPECT_THROW(replay(tr, o), Error);  // budget larger than the sequence
  o.run.budget = Budget(Amount::parse("5"));
  o.run.layers = {3};
  EXPECT_THROW(replay(tr, o), Error);
  o.run.layers = {};
  EXPECT_THROW(PolicySpec::named("nope"), Error);
  o.run.policy = PolicySpec::named("oracle");  // an offline policy needs a schedule
  EXPECT_THROW(replay(tr, o), Error);
  o.run.heads = {4};
  o.run.policy = PolicySpec::named("h2o");
  EXPECT_THROW(replay(tr, o), Error);  // no head 4
  o.run.heads = {};
  o.run.policy = PolicySpec::named("h2o");
  o.run.prompt_len = 21;
  EXPECT_THROW(replay(tr, o), Error);
}
