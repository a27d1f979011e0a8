// Other papers' claims (SNAP1, SINK1, SCIS1, TOVA1, ADA1-ADA3): each check fails on an input built
// to break the paper's statement and holds on one built to meet it; `claims` selects which papers'
// claims run, and a run of H2O's claims is what it was before the others were registered.
#include <gtest/gtest.h>

#include <functional>

#include "adakv_layer.hpp"
#include "head_data.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/proofs_check/trace_checks.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::detail;

namespace {

// One layer of dense attention rows w(h, i, j), j <= i (normalised here), with values val(h, j, x).
Trace dense_trace(
    int heads, int n, int prompt_len, const std::function<double(int, int, int)>& w,
    const std::function<float(int, int, int)>& val = [](int, int j, int x) {
      return static_cast<float>((j + 1) * (x + 1) % 7);
    }) {
  constexpr int d = 2;
  Trace t;
  t.resize_layers(1);
  t.n_heads = t.n_kv_heads = heads;
  t.n_tokens = n;
  t.head_dim = d;
  t.prompt_len = prompt_len;
  t.attn[0].assign(static_cast<size_t>(heads) * n * n, 0.f);
  t.v[0].resize(static_cast<size_t>(heads) * n * d);
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < n; ++i) {
      double sum = 0.0;
      for (int j = 0; j <= i; ++j) sum += w(h, i, j);
      for (int j = 0; j <= i; ++j)
        t.attn[0][(static_cast<size_t>(h) * n + i) * n + j] = static_cast<float>(w(h, i, j) / sum);
    }
    for (int j = 0; j < n; ++j)
      for (int x = 0; x < d; ++x) t.v[0][(static_cast<size_t>(h) * n + j) * d + x] = val(h, j, x);
  }
  t.validate();
  return t;
}

TraceChecksOptions options_for(const std::string& paper, const std::string& budget) {
  TraceChecksOptions o;
  o.run.budget = Budget(Amount::parse(budget));
  o.claims = {paper};
  o.threads = 1;
  return o;
}

// The one record of `id` on head 0 of the trace.
CheckRecord head_record_of(const Trace& t, const std::string& id, TraceChecksOptions o) {
  o.run.prompt_len = t.prompt_len;
  const HeadResult r = check_head(t, 0, 0, o);
  for (const auto& rec : r.records)
    if (rec.id == id) return rec;
  throw std::runtime_error("no " + id + " record");
}

// Queries 48..95 after a 48-token prompt; the observation window holds queries 24..47 (W = 24) and
// votes over the prefix 0..23. `early` and `late` name the four keys the window's and the later
// queries look at (weight 10 against 1).
Trace focus_trace(int early, int late) {
  return dense_trace(1, 96, 48, [=](int, int i, int j) {
    const int focus = i < 48 ? early : late;
    return (j >= focus && j < focus + 8 && i >= 24) ? 10.0 : 1.0;
  });
}

}  // namespace

TEST(ClaimCanFail, SINK1_UniformAttentionHasNoSink) {
  const Trace t = dense_trace(1, 64, 0, [](int, int, int) { return 1.0; });
  const CheckRecord r = head_record_of(t, "SINK1", options_for("streamingllm", "16"));
  EXPECT_FALSE(r.holds) << r.detail.dump();
  EXPECT_NEAR(r.metric, 0.0, 1e-6);  // four sinks gain what four evicted window tokens held
  EXPECT_EQ(r.kind, ClaimKind::Finding);
}

TEST(OtherPapers, SINK1_HoldsWhereTheFirstTokenTakesMostOfEveryRow) {
  const Trace t = dense_trace(1, 64, 0, [](int, int i, int j) { return j == 0 ? 2.0 * (i + 1) : 1.0; });
  const CheckRecord r = head_record_of(t, "SINK1", options_for("streamingllm", "16"));
  EXPECT_TRUE(r.holds) << r.detail.dump();
  EXPECT_GT(r.detail.at("sink_mass").get<double>(), 0.6);
}

TEST(ClaimCanFail, SNAP1_LaterQueriesLookElsewhere) {
  const CheckRecord r = head_record_of(focus_trace(0, 12), "SNAP1", options_for("snapkv", "32"));
  EXPECT_FALSE(r.holds) << r.detail.dump();
  EXPECT_EQ(r.detail.at("kept_from_prefix").get<int>(), 8);
  EXPECT_NEAR(r.metric, 0.1, 1e-9);  // the vote holds 8 keys of weight 1 where the best hold 8 of weight 10
  EXPECT_DOUBLE_EQ(r.detail.at("hit_rate").get<double>(), 0.0);
}

TEST(OtherPapers, SNAP1_HoldsWhenLaterQueriesLookWhereTheWindowDid) {
  const CheckRecord r = head_record_of(focus_trace(4, 4), "SNAP1", options_for("snapkv", "32"));
  EXPECT_TRUE(r.holds) << r.detail.dump();
  EXPECT_DOUBLE_EQ(r.metric, 1.0);
}

TEST(ClaimCanFail, SCIS1_ImportanceMovesOn) {
  const CheckRecord r = head_record_of(focus_trace(0, 12), "SCIS1", options_for("scissorhands", "32"));
  EXPECT_FALSE(r.holds) << r.detail.dump();
  EXPECT_DOUBLE_EQ(r.metric, 0.0);
  EXPECT_EQ(r.detail.at("pivotal_before").get<long>(), 8);
  EXPECT_EQ(r.detail.at("pivotal_later").get<long>(), 8);
}

TEST(OtherPapers, SCIS1_HoldsWhenThePivotalTokensStay) {
  const CheckRecord r = head_record_of(focus_trace(4, 4), "SCIS1", options_for("scissorhands", "32"));
  EXPECT_TRUE(r.holds) << r.detail.dump();
  EXPECT_DOUBLE_EQ(r.metric, 1.0);
}

TEST(ClaimCanFail, TOVA1_AttentionAlternates) {
  // Even queries look at keys 4-7, odd ones at 12-15: the current row's top 8 (its four keys, then
  // the earliest of the ties, 0-3) never holds the next row's keys.
  const Trace t = dense_trace(1, 64, 0, [](int, int i, int j) {
    const int focus = i % 2 == 0 ? 4 : 12;
    return j >= focus && j < focus + 4 ? 20.0 : 1.0;
  });
  const CheckRecord r = head_record_of(t, "TOVA1", options_for("tova", "8"));
  EXPECT_FALSE(r.holds) << r.detail.dump();
  EXPECT_LT(r.metric, 0.5);
}

TEST(OtherPapers, TOVA1_HoldsWhenAttentionFollowsTheNewestTokens) {
  const Trace t = dense_trace(1, 64, 0, [](int, int i, int j) { return i - j < 4 ? 20.0 : 1.0; });
  const CheckRecord r = head_record_of(t, "TOVA1", options_for("tova", "8"));
  EXPECT_TRUE(r.holds) << r.detail.dump();
  EXPECT_GT(r.metric, 1.0);
}

namespace {

// Head 0 puts half of its mass on a key whose value is zero and spreads the rest over keys of value
// (10, 10); head 1 attends uniformly over keys of one value. Ada-KV gives head 1's light but even
// keys the budget and leaves head 0 its one heavy key, so head 0's output collapses.
LayerQuery light_tokens_carry_the_output() {
  constexpr int n = 21;
  LayerQuery q;
  q.i = n - 1;
  q.rows = {std::vector<double>(n, 0.5 / (n - 1)), std::vector<double>(n, 1.0 / n)};
  q.rows[0][0] = 0.5;
  q.values = {Eigen::MatrixXd::Constant(n, 2, 10.0), Eigen::MatrixXd::Ones(n, 2)};
  q.values[0].row(0).setZero();
  return q;
}

const CheckRecord& find(const std::vector<CheckRecord>& rs, const std::string& id, const std::string& variant) {
  for (const auto& r : rs)
    if (r.id == id && r.variant == variant) return r;
  throw std::runtime_error("no record " + id + " " + variant);
}

TraceChecksOptions adakv_options() {
  TraceChecksOptions o;
  o.claims = {"adakv"};
  return o;
}

}  // namespace

TEST(ClaimCanFail, ADA3_LightTokensCarryTheOutput) {
  AdaKvAccumulator acc(0, {4, 4});
  acc.add(light_tokens_carry_the_output());
  const auto rs = acc.records(adakv_options());
  const CheckRecord& r = find(rs, "ADA3", "adaptive vs uniform");
  EXPECT_FALSE(r.holds) << r.detail.dump();
  EXPECT_GT(r.metric, 1.2);
  EXPECT_EQ(r.layer, 0);
  EXPECT_EQ(r.head, -1);
  // The bound and its minimisation still hold: the loss rises while the bound falls.
  EXPECT_TRUE(find(rs, "ADA1", "adaptive").holds);
  EXPECT_TRUE(find(rs, "ADA1", "uniform").holds);
  EXPECT_TRUE(find(rs, "ADA2", "adaptive vs uniform").holds);
}

TEST(ClaimCanFail, ADA1_AttentionRowNotADistribution) {
  LayerQuery q = light_tokens_carry_the_output();
  for (double& a : q.rows[0]) a *= 3.0;  // head 0's row sums to 3: its kept mass exceeds 1
  AdaKvAccumulator acc(0, {4, 4});
  acc.add(q);
  const auto rs = acc.records(adakv_options());
  const CheckRecord& r = find(rs, "ADA1", "adaptive");
  EXPECT_FALSE(r.holds) << r.detail.dump();
  EXPECT_EQ(r.step, q.i);
}

TEST(ClaimCanFail, ADA2_AllocationThatIsNotTheTopAcrossHeads) {
  // Keeps each head's lightest keys: its bound is above the uniform top-k's.
  const HeadAllocation lightest = [](const std::vector<std::vector<double>>& rows, const std::vector<int>& budgets) {
    std::vector<std::vector<double>> negated = rows;
    for (auto& r : negated)
      for (double& a : r) a = -a;
    return uniform_allocation(negated, budgets);
  };
  AdaKvAccumulator acc(0, {4, 4}, lightest);
  acc.add(light_tokens_carry_the_output());
  const auto rs = acc.records(adakv_options());
  const CheckRecord& r = find(rs, "ADA2", "adaptive vs uniform");
  EXPECT_FALSE(r.holds) << r.detail.dump();
  EXPECT_GT(r.metric, 0.0);
}

TEST(OtherPapers, AdaptiveAllocationTakesTheLargestScoresOfTheLayer) {
  const std::vector<std::vector<double>> rows = {{0.5, 0.3, 0.2}, {0.25, 0.25, 0.25, 0.25}};
  const auto kept = adaptive_allocation(rows, {2, 2});
  EXPECT_EQ(kept[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(kept[1], (std::vector<int>{0, 1}));  // 0.25 ties: the lower head's keys were taken, then the earlier
  EXPECT_TRUE(adaptive_allocation(rows, {1, 1})[1].empty());  // 0.5 and 0.3 take both slots
}

TEST(OtherPapers, OnlyTheSelectedPapersRunAndH2OsRunIsUnchanged) {
  const Trace t = test::synthetic_layer(2, 1, 48, 12, 16, 3);
  TraceChecksOptions o;
  o.run.budget = Budget(Amount::parse("25%"));
  o.run.prompt_len = 16;
  o.threads = 1;
  o.sweep = {};
  auto ids = [&](const TraceChecksOptions& x) {
    std::set<std::string> out;
    const TraceChecksResult res = run_trace_checks(t, x);
    for (const auto& r : res.report.records()) out.insert(r.id);
    return out;
  };
  const std::set<std::string> h2o = ids(o);
  EXPECT_TRUE(h2o.count("C1"));
  for (const char* other : {"ADA1", "SNAP1", "SINK1", "SCIS1", "TOVA1"}) EXPECT_FALSE(h2o.count(other)) << other;
  TraceChecksOptions snap = o;
  snap.claims = {"snapkv"};
  EXPECT_EQ(ids(snap), (std::set<std::string>{"SNAP1"}));
  TraceChecksOptions sink = o;
  sink.checks = {"SINK1", "ADA2"};  // their papers follow from the ids
  EXPECT_EQ(ids(sink), (std::set<std::string>{"SINK1", "ADA2"}));
  TraceChecksOptions all = o;
  all.claims = parse_papers("all");
  const std::set<std::string> every = ids(all);
  for (const char* id : {"C1", "ADA1", "ADA2", "ADA3", "SNAP1", "SINK1", "SCIS1", "TOVA1"})
    EXPECT_TRUE(every.count(id)) << id;
  // H2O's records of the run with every paper are those of H2O's run alone.
  auto h2o_records = [&](const TraceChecksOptions& x) {
    std::vector<nlohmann::json> out;
    const TraceChecksResult res = run_trace_checks(t, x);
    for (const auto& r : res.report.records())
      if (claim_info(r.id).paper == "h2o") out.push_back(record_to_json(r));
    return out;
  };
  EXPECT_EQ(h2o_records(all), h2o_records(o));
}

TEST(OtherPapers, RefusesUnknownPapersAndIdsTheirClaimsLeaveOut) {
  test::expect_refusal([] { parse_papers("snapkv,h2o2"); }, "unknown paper 'h2o2'");
  TraceChecksOptions o;
  o.claims = {"h2o"};
  o.checks = {"SNAP1"};
  test::expect_refusal([&] { o.validate(); }, "SNAP1 is SnapKV's claim, which --claims leaves out (add snapkv)");
}

TEST(OtherPapers, EveryTheoremHoldsOnTheRealTrace) {
  const Trace t = read_trace(std::string(KVO_SOURCE_DIR) + "/tests/data/golden-gpl3-128.safetensors");
  TraceChecksOptions o;
  o.run.budget = Budget(Amount::parse("20%"));
  o.claims = parse_papers("adakv,snapkv,streamingllm,scissorhands,tova");
  o.threads = 1;
  const auto res = run_trace_checks(t, o);
  EXPECT_EQ(res.report.theorem_failures(), 0);
  long ada = 0;
  for (const auto& r : res.report.records()) ada += r.id.rfind("ADA", 0) == 0 ? 1 : 0;
  EXPECT_EQ(ada, 3 * 4);  // per layer: ADA1 twice, ADA2, ADA3
}
