// The claim checks end to end: on synthetic traces every theorem holds and every claim and defect
// produces records; on a trace built so that UDC1 fails the finding shows it; constructed
// instances exhibit the defects D6 and D7.
#include "kvo/proofs_check/trace_checks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "head_data.hpp"
#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/proofs_check/counterexamples.hpp"
#include "kvo/proofs_check/report_writer.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

TraceChecksOptions small_options() {
  TraceChecksOptions o;
  o.run.budget = Budget(Amount::parse("25%"));
  o.sweep = {0.2, 0.4};
  o.loss_random = 2;
  o.loss_heads = 1;
  o.samples = 40;
  o.threads = 2;
  return o;
}

const CheckRecord* find(const CheckRecords& r, const std::string& id, const std::string& variant) {
  for (const auto& x : r.records())
    if (x.id == id && x.variant == variant) return &x;
  return nullptr;
}

}  // namespace

TEST(TraceChecks, EveryClaimRunsAndEveryTheoremHoldsOnSyntheticTraces) {
  for (std::uint64_t seed : {1u, 2u}) {
    Trace tr = test::synthetic_layer(2, 1, 80, 12, 30, seed);
    tr.metadata.erase("model");  // its random ids read as words, so that E3 (words) runs too
    TraceChecksOptions o = small_options();
    o.run.prompt_len = seed == 1 ? tr.prompt_len : 0;  // with and without a prefill truncation
    o.claims = parse_papers("all");                    // H2O's claims and every other paper's
    const TraceChecksResult res = run_trace_checks(tr, o);
    std::set<std::string> ids;
    for (const auto& r : res.report.records()) {
      ids.insert(r.id);
      if (r.kind == ClaimKind::Theorem) {
        EXPECT_TRUE(r.holds) << r.id << " " << r.variant << " " << r.detail.dump();
      }
    }
    for (const auto& c : claim_catalogue())
      if (!c.closed_loop) {
        EXPECT_TRUE(ids.count(c.id)) << c.id;
      }
    EXPECT_EQ(res.report.theorem_failures(), 0);
    EXPECT_EQ(res.series.size(), small_options().policies.size());
    EXPECT_EQ(res.sweep.size(), 2u * (small_options().policies.size() + 2));
    // The retained mass of every nested policy is at most OPT_dyn, which is at most the static optimum.
    for (const auto& p : res.sweep) {
      double dyn = 0, stat = 0;
      for (const auto& q : res.sweep)
        if (q.budget == p.budget) {
          if (q.policy == "OPT_dyn") dyn = q.retained_mass;
          if (q.policy == "static optimum") stat = q.retained_mass;
        }
      EXPECT_LE(dyn, stat + 1e-12);
      if (p.policy != "h2o-mask" && p.policy != "static optimum") {
        EXPECT_LE(p.retained_mass, dyn + 1e-12) << p.policy;
      }
    }
  }
}

TEST(TraceChecks, ResultsDoNotDependOnThreads) {
  const Trace tr = test::random_trace(1, 2, 1, 48, 6, 5);
  TraceChecksOptions a = small_options(), b = small_options();
  a.threads = 1;
  b.threads = 2;
  const auto ra = run_trace_checks(tr, a).report.to_json({}), rb = run_trace_checks(tr, b).report.to_json({});
  EXPECT_EQ(ra.dump(), rb.dump());
}

// What lets `verify` spread units over MPI ranks and resume from checkpoints: units computed in
// any order, each alone, assemble into the result of one threaded run, plots and series included.
TEST(TraceChecks, UnitsInAnyOrderAssembleIntoTheSameResult) {
  const Trace tr = test::synthetic_layer(3, 1, 64, 12, 20, 9);
  const TraceChecksOptions o = small_options();
  const TraceChecksResult whole = run_trace_checks(tr, o);
  const TraceChecksPlan plan(tr, o);
  ASSERT_EQ(plan.size(), work_units(tr, o));
  std::vector<std::string> results(static_cast<size_t>(plan.size()));
  for (int u = plan.size() - 1; u >= 0; --u) {
    results[static_cast<size_t>(u)] = plan.run(u);
    EXPECT_FALSE(plan.name(u).empty());
    EXPECT_GT(plan.cost(u), 0.0);
  }
  const TraceChecksResult parts = plan.assemble(results);
  EXPECT_EQ(parts.report.to_json({}).dump(), whole.report.to_json({}).dump());
  EXPECT_EQ(report_markdown(parts, {}), report_markdown(whole, {}));
  EXPECT_EQ(report_plots(parts), report_plots(whole));
  // A damaged result is refused with the unit's name, not read past its end.
  results[0].resize(results[0].size() / 2);
  try {
    plan.assemble(results);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(plan.name(0)), std::string::npos) << e.what();
  }
}

// A sweep budget that resolves to the checked budget is no unit of its own: the head's unit
// computes that cell in its own pass, and the sweep's points are those of the cells sweep_head gives.
TEST(TraceChecks, SweepCellAtTheCheckedBudgetComesFromTheHeadsUnit) {
  const Trace tr = test::synthetic_layer(3, 1, 64, 12, 20, 9);
  TraceChecksOptions o = small_options();
  o.sweep = {0.25, 0.4};  // 0.25 is the checked budget
  const TraceChecksPlan plan(tr, o);
  const int heads = tr.n_layers * tr.n_heads, sweep_heads = tr.n_layers;  // one sweep head per layer
  ASSERT_EQ(plan.size(), work_units(tr, o));
  EXPECT_EQ(plan.size(), heads + sweep_heads + (work_units(tr, small_options()) - heads - 2 * sweep_heads));
  const TraceChecksResult res = run_trace_checks(tr, o);
  for (const double b : o.sweep) {
    TraceChecksOptions so = o;
    so.run.budget = o.run.budget.with_total(Amount{true, b});
    double dyn = 0.0;
    for (int layer = 0; layer < tr.n_layers; ++layer)
      dyn += detail::sweep_head(tr, layer, layer % tr.n_heads, so).dyn / static_cast<double>(sweep_heads);
    const auto point = std::find_if(res.sweep.begin(), res.sweep.end(),
                                    [&](const SweepPoint& p) { return p.policy == "OPT_dyn" && p.budget == b; });
    ASSERT_NE(point, res.sweep.end());
    EXPECT_EQ(point->retained_mass, dyn) << "budget " << b;
  }
}

TEST(TraceChecks, UdcOneFailsOnATraceBuiltToBreakIt) {
  // Dense attention where every query puts 99% of its mass on itself: the one-step objective B
  // loses almost all of its value from one step to the next (theta close to 1), while A and C
  // accumulate and keep theta = 0.
  const int n = 40;
  Trace tr;
  tr.resize_layers(1);
  tr.n_heads = 1;
  tr.n_kv_heads = 1;
  tr.n_tokens = n;
  tr.attn[0].assign(static_cast<size_t>(n) * n, 0.0f);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j)
      tr.attn[0][static_cast<size_t>(i) * n + j] = i == 0 ? 1.0f : (j == i ? 0.99f : 0.01f / static_cast<float>(i));
  TraceChecksOptions o = small_options();
  o.checks = {"C10"};
  o.sweep.clear();
  const auto res = run_trace_checks(tr, o);
  const CheckRecord* b = find(res.report, "C10", "B[id]");
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(b->holds);
  EXPECT_GT(b->metric, 0.95);
  EXPECT_EQ(b->kind, ClaimKind::Finding);
  const CheckRecord* a = find(res.report, "C10", "A[id]");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->holds);
  EXPECT_EQ(a->metric, 0.0);
  EXPECT_EQ(res.report.theorem_failures(), 0);
}

TEST(TraceChecks, SelectedChecksOnly) {
  const Trace tr = test::random_trace(1, 1, 1, 32, 4, 8);
  TraceChecksOptions o = small_options();
  o.checks = {"C1", "D1"};
  o.sweep.clear();
  const auto res = run_trace_checks(tr, o);
  for (const auto& r : res.report.records()) EXPECT_TRUE(r.id == "C1" || r.id == "D1") << r.id;
  o.checks = {"C99"};
  EXPECT_THROW(run_trace_checks(tr, o), Error);
  o.checks = {"E5"};  // a closed-loop experiment: eval judges it, verify refuses it by name
  EXPECT_NE(test::error_of([&] { run_trace_checks(tr, o); }).find("kvoracle eval"), std::string::npos);
}

// C19 and D10 solve the offline problem on every step by default, on the first offline_tokens
// steps when asked; OPT_dyn has the bits of the dense assignment solver on the same steps.
TEST(TraceChecks, OfflineOptimumOnEveryStepOrOnAPrefix) {
  const Trace tr = test::synthetic_layer(1, 1, 90, 12, 0, 13);
  const HeadView head(tr, 0, 0);
  TraceChecksOptions o = small_options();
  o.checks = {"C19", "D10"};
  o.sweep.clear();
  for (const int tokens : {0, 40}) {
    o.offline_tokens = tokens;
    const auto res = run_trace_checks(tr, o);
    const CheckRecord* c19 = find(res.report, "C19", "retained mass");
    const CheckRecord* d10 = find(res.report, "D10", "retained mass");
    ASSERT_TRUE(c19 && d10);
    const int m = tokens > 0 ? tokens : 90;
    OfflineProblem p;
    p.w = dense_attention(head).topLeftCorner(m, m);
    p.budget = o.run.budget.resolve(90, 0, 0).total;
    EXPECT_EQ(c19->detail["opt_dyn"].get<double>(), solve_offline(p).value) << tokens;
    EXPECT_EQ(d10->detail["opt_dyn"], c19->detail["opt_dyn"]);
    EXPECT_TRUE(c19->holds);
    EXPECT_EQ(c19->detail.contains("offline_steps"), tokens > 0);
    if (tokens > 0) {
      EXPECT_EQ(c19->detail["offline_steps"], 40);
    }
  }
  o.offline_tokens = 1;  // 0 is every step; one step is no eviction problem
  EXPECT_NE(test::error_of([&] { run_trace_checks(tr, o); }).find("offline_tokens must be 0"), std::string::npos);
}

TEST(TraceChecks, AlgorithmOneFillTestLeavesTheCacheOneShort) {
  const Trace tr = test::random_trace(1, 1, 1, 30, 4, 9);
  TraceChecksOptions o = small_options();
  o.checks = {"D1"};
  o.run.budget = Budget(Amount::parse("6"));
  o.sweep.clear();
  const auto res = run_trace_checks(tr, o);
  ASSERT_EQ(res.report.records().size(), 1u);
  EXPECT_FALSE(res.report.records()[0].holds);
  EXPECT_EQ(res.report.records()[0].metric, 5.0);
}

TEST(Counterexamples, OneSidedEpsilonBreaksLemmaD30AndTheRepairHolds) {
  const CheckRecord r = one_sided_eps_instance();
  EXPECT_FALSE(r.holds);
  EXPECT_TRUE(r.detail["hypotheses_hold"].get<bool>());
  EXPECT_TRUE(r.detail["two_sided_holds"].get<bool>());
  EXPECT_GT(r.metric, 0.5);
}

TEST(Counterexamples, ForcedTokenBreaksLinkA) {
  const CheckRecord r = forced_token_instance();
  EXPECT_FALSE(r.holds);
  EXPECT_GT(r.detail["f_before"].get<double>(), r.detail["f_after"].get<double>());
}

TEST(ReportWriter, WritesEveryFileAndAReadableTable) {
  const Trace tr = test::random_trace(1, 1, 1, 32, 4, 10);
  TraceChecksOptions o = small_options();
  o.sweep = {0.25};
  const auto res = run_trace_checks(tr, o);
  const std::string dir = ::testing::TempDir() + "/kvo-report-test";
  const auto files = write_report(dir, res, {{"trace", "random"}});
  EXPECT_EQ(files.size(), 6u);
  const std::string md = report_markdown(res, {{"trace", "random"}});
  EXPECT_NE(md.find("| **C1** eviction invariants: \\|S_i\\|"), std::string::npos);
  EXPECT_NE(md.find("every theorem check holds"), std::string::npos);
  // E1-E3 per layer: one row for the trace's one layer, E1 and E2 over its one head.
  EXPECT_NE(md.find("## The paper's observations per layer (E1-E3)"), std::string::npos);
  const size_t row = md.find("\n| 0 | ");
  ASSERT_NE(row, std::string::npos);
  const std::string line = md.substr(row + 1, md.find('\n', row + 1) - row - 1);
  EXPECT_EQ(std::count(line.begin(), line.end(), '|'), 9) << line;
  EXPECT_NE(line.find(" of 1 |"), std::string::npos) << line;
  const auto j = res.report.to_json({});
  EXPECT_EQ(j["format"], "kvoracle-report");
  EXPECT_EQ(j["records"].size(), res.report.records().size());
  EXPECT_THROW(write_report("/proc/kvo-no-such-dir", res, {}), Error);
}
