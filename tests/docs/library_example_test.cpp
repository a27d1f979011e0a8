// The snippets of docs/library.md, compiled and run so the documentation cannot drift.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "kvo/core/attention.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/static_oracle.hpp"
#include "kvo/oracle/static_run.hpp"
#include "kvo/proofs_check/report_writer.hpp"
#include "kvo/proofs_check/trace_checks.hpp"
#include "kvo/proofs_check/verify_run.hpp"

TEST(LibraryExample, GreedyAgainstTheExactOptimum) {
  // --8<-- [start:greedy]
  Eigen::MatrixXd sim(3, 5);       // 3 client queries x 5 candidate keys
  sim << 0.9, 0.1, 0.0, 0.3, 0.2,  //
      0.1, 0.8, 0.1, 0.0, 0.4,     //
      0.0, 0.2, 0.7, 0.6, 0.1;
  const kvo::FacilityLocation f(sim);
  kvo::GreedyOptions opt;
  opt.budget = 2;
  const kvo::GreedyResult g = kvo::lazy_greedy(f, opt);      // picks, gains, upper_bound
  const kvo::StaticSolution best = kvo::solve_static(f, 2);  // exact (brute force here)
  const double ratio = g.value / best.value;                 // >= 1 - (1 - 1/2)^2 = 0.75
  // --8<-- [end:greedy]
  EXPECT_GE(ratio, kvo::nwf_factor(2));
  EXPECT_GE(g.upper_bound, best.value);
}

TEST(LibraryExample, ReplayAPolicy) {
  // --8<-- [start:replay]
  const kvo::Trace trace = kvo::synthesize(kvo::SynthOptions{});  // or kvo::read_trace(path)
  kvo::ReplayOptions o;
  o.run.policy = kvo::PolicySpec::named("h2o");  // kvo::policy_table(): every policy with its traits
  o.run.budget = kvo::Budget::parse("20%");      // or Budget::parse("20%", "8", {"L3=0.1"})
  const kvo::ReplayResult r = kvo::replay(trace, o);
  const auto& step = r.heads[0].steps[200];  // kept, evicted, retained_mass, ...
  kvo::OfflineProblem p;                     // head 0's offline optimum of the retained dense attention mass
  p.w = kvo::dense_attention(kvo::HeadView(trace, r.heads[0].layer, r.heads[0].head));
  p.budget = r.heads[0].budget.total;
  const double ratio = kvo::schedule_value(p, r.heads[0].kept_sets()) / kvo::solve_offline(p).value;  // in (0, 1]
  // --8<-- [end:replay]
  EXPECT_LE(static_cast<int>(step.kept.size()), r.heads[0].budget.total);
  EXPECT_GT(ratio, 0.0);
  EXPECT_LE(ratio, 1.0 + 1e-12);
}

TEST(LibraryExample, RunTheClaimChecks) {
  // --8<-- [start:checks]
  kvo::SynthOptions so;
  so.layers = 1;
  so.heads = 1;
  so.kv_heads = 1;
  so.tokens = 64;
  const kvo::Trace trace = kvo::synthesize(so);
  kvo::TraceChecksOptions o;
  o.run.budget = kvo::Budget::parse("25%");
  o.checks = {"C10", "C11", "C15"};  // empty: all of C1-C27, D1-D11 and E1-E3
  const kvo::TraceChecksResult res = kvo::run_trace_checks(trace, o);
  long failing_claims = 0;  // paper claims that fail on this trace (findings, not bugs)
  for (const kvo::ClaimSummary& s : res.report.summaries())  // also s.variant, s.worst, s.where
    if (s.kind == kvo::ClaimKind::Finding && s.holding < s.records) ++failing_claims;
  const bool bug = res.report.theorem_failures() > 0;  // a failed theorem is a kvoracle bug
  kvo::write_report("/tmp/kvo-example-report", res, {{"trace", "synthetic"}});
  // --8<-- [end:checks]
  EXPECT_FALSE(bug);
  EXPECT_FALSE(res.report.summaries().empty());
  EXPECT_GT(failing_claims, 0);  // UDC2 (C11) fails on every head
}

TEST(LibraryExample, CommandsAsLibraryCalls) {
  kvo::SynthOptions so;
  so.layers = 1;
  so.heads = 2;
  so.kv_heads = 1;
  so.tokens = 48;
  so.prompt_len = 8;
  const kvo::Trace trace = kvo::synthesize(so);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kvo-library-example-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string trace_path = (dir / "trace.safetensors").string(), report_dir = (dir / "report").string();
  kvo::write_trace(trace_path, trace);
  // --8<-- [start:commands]
  kvo::RunOptions run;  // the fields of kvo::run_options_schema(): the CLI's flags, Python's keywords
  run.budget = "8";
  run.sinks = 2;
  const kvo::RunConfig config = run.build(kvo::PolicyId::Streaming, &trace);  // prompt_len: the trace's

  kvo::StaticOracleRequest request;  // kvoracle oracle static
  request.run.budget = "8";
  request.run.objective = "mass";
  request.every = 16;
  const kvo::StaticOracleResult optima = kvo::run_static_oracle(trace, request);

  kvo::TraceChecksOptions checks;  // kvoracle verify, as a work plan
  checks.run = run.build(kvo::PolicyId::H2O, &trace);
  checks.checks = {"C1", "C10"};
  const kvo::TraceChecksPlan plan(trace, checks);                      // units: heads, sweep cells, loss instances
  const kvo::TraceChecksResult result = kvo::run_on_threads(plan, 2);  // or scaleout::run_plan over MPI ranks

  kvo::VerifyRequest verify;  // kvoracle verify TRACE --report DIR: trace files in, report out
  verify.traces = {trace_path};
  verify.run.budget = "8";
  verify.checks.checks = {"C1", "C10"};
  verify.report_dir = report_dir;
  const std::optional<kvo::VerifyResult> verified = kvo::run_verify(verify, kvo::WorkTeam(2));
  // --8<-- [end:commands]
  EXPECT_EQ(config.prompt_len, 8);
  EXPECT_EQ(config.policy.sinks, 2);
  EXPECT_EQ(optima.heads.size(), 2u);
  EXPECT_EQ(optima.heads[0].solves.back().step, 47);
  EXPECT_EQ(result.report.theorem_failures(), 0);
  EXPECT_FALSE(result.report.records().empty());
  ASSERT_TRUE(verified.has_value());
  EXPECT_EQ(verified->theorem_failures, 0);
  EXPECT_TRUE(std::filesystem::exists(dir / "report" / "report.md"));
  std::filesystem::remove_all(dir);
}
