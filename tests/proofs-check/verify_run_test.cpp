// `kvoracle verify` as a library call (proofs-check/verify_run.hpp): one trace's report, json and
// plot; several traces' report across them; the same results as the checks run directly; a bad
// trace leaves no report; the request's JSON form and its refusals; the team runs every plan.
#include "kvo/proofs_check/verify_run.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/trace_io.hpp"
#include "test_support.hpp"

using namespace kvo;
using kvo::test::error_of;
namespace fs = std::filesystem;
using kvo::test::fresh_dir;

namespace {

// A quick request: two claims with their plots' sweep kept small.
VerifyRequest small_request(std::vector<std::string> traces) {
  VerifyRequest r;
  r.traces = std::move(traces);
  r.run.budget = "25%";
  r.checks.checks = {"C1", "C10", "D1"};
  r.checks.sweep = {0.25};
  r.checks.loss_random = 2;
  r.checks.samples = 20;
  return r;
}

std::string write_small_trace(const fs::path& dir, const std::string& stem, std::uint64_t seed) {
  const std::string path = (dir / (stem + ".safetensors")).string();
  write_trace(path, test::synthetic_layer(2, 1, 40, 12, 10, seed));
  return path;
}

// Records the plans a call runs, then runs them as the one-process team does.
class RecordingTeam final : public WorkTeam {
 public:
  RecordingTeam() : WorkTeam(2) {}
  std::optional<std::vector<std::string>> run_units(const WorkUnits& plan, const std::string& section,
                                                    const std::string& label) const override {
    {
      std::lock_guard lock(mu_);
      runs.push_back(section + " " + label);
    }
    return WorkTeam::run_units(plan, section, label);
  }
  mutable std::vector<std::string> runs;

 private:
  mutable std::mutex mu_;
};

}  // namespace

TEST(VerifyRun, OneTraceWritesItsReportJsonAndPlotWithTheChecksResults) {
  const fs::path d = fresh_dir("verify-run", "one");
  const std::string path = write_small_trace(d, "a", 1);
  VerifyRequest req = small_request({path});
  req.report_dir = (d / "report").string();
  req.json_path = (d / "a.json").string();
  req.plot_path = (d / "a.svg").string();
  int seen = 0;
  const auto r = run_verify(req, WorkTeam(2), [&](const VerifiedTrace& v) {
    ++seen;
    EXPECT_EQ(v.path, path);
    EXPECT_EQ(v.meta.at("policies"), join_policy_names(default_policies(PolicyListUse::Checks)));
  });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(seen, 1);
  EXPECT_FALSE(r->several);
  ASSERT_EQ(r->traces.size(), 1u);
  EXPECT_EQ(r->theorem_failures, 0);
  EXPECT_TRUE(fs::exists(d / "report" / "report.md"));
  EXPECT_TRUE(fs::exists(d / "a.svg"));
  EXPECT_GE(r->report_files, 2);
  // The json file is the checks' report as run_trace_checks gives it, with the run's metadata.
  const nlohmann::json file = nlohmann::json::parse(std::ifstream(d / "a.json"));
  const Trace tr = read_trace(path);
  TraceChecksOptions o = req.checks;
  o.run = req.run.build(o.policies.front(), &tr);
  const TraceChecksResult direct = run_trace_checks(tr, o);
  EXPECT_EQ(file.at("records"), direct.report.to_json({}).at("records"));
  EXPECT_EQ(file.at("meta").at("prompt_len"), tr.prompt_len);
  EXPECT_EQ(r->to_json(), file);
  fs::remove_all(d);
}

TEST(VerifyRun, SeveralTracesGetAFolderEachAndAReportAcrossThem) {
  const fs::path d = fresh_dir("verify-run", "several");
  fs::create_directories(d / "in");
  write_small_trace(d / "in", "b", 2);
  write_small_trace(d / "in", "a", 3);
  VerifyRequest req = small_request({(d / "in").string()});
  req.report_dir = (d / "report").string();
  req.json_path = (d / "all.json").string();
  RecordingTeam team;
  const auto r = run_verify(req, team);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->several);
  EXPECT_EQ(team.runs, (std::vector<std::string>{"t0 verify a", "t1 verify b"}));
  ASSERT_EQ(r->traces.size(), 2u);
  EXPECT_EQ(r->traces[0].name, "a");
  for (const char* f : {"report.md", "report.json", "a/report.md", "b/report.md"})
    EXPECT_TRUE(fs::exists(d / "report" / f)) << f;
  EXPECT_FALSE(fs::exists(d / "report" / ".kvoracle-partial"));
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(d / "all.json"));
  EXPECT_EQ(j.at("reports").size(), 2u);
  EXPECT_EQ(j, r->to_json());
  fs::remove_all(d);
}

TEST(VerifyRun, ABadTraceStopsTheRunAndLeavesNoReport) {
  const fs::path d = fresh_dir("verify-run", "bad");
  const std::string good = write_small_trace(d, "good", 4);
  const std::string bad = (d / "bad.safetensors").string();
  std::ofstream(bad) << "not a trace";
  VerifyRequest req = small_request({good, bad});
  req.report_dir = (d / "report").string();
  const std::string why = error_of([&] { run_verify(req); });
  EXPECT_NE(why.find(bad), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(d / "report" / "report.md"));
  EXPECT_FALSE(fs::exists(d / "report" / ".kvoracle-partial"));
  fs::remove_all(d);
}

TEST(VerifyRun, RequestRoundTripsThroughJsonAndRefusesWhatCannotRun) {
  VerifyRequest req = small_request({"x.safetensors"});
  req.report_dir = "out";
  req.run.history = 3;
  const VerifyRequest back = VerifyRequest::from_json(req.to_json());
  EXPECT_EQ(back.to_json(), req.to_json());
  EXPECT_EQ(back.run.history, 3);
  EXPECT_EQ(back.checks.checks, req.checks.checks);
  EXPECT_NE(error_of([] {
              VerifyRequest::from_json({{"tracez", {"a"}}});
            }).find("unknown field 'tracez'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              VerifyRequest::from_json({{"samples", "many"}});
            }).find("'samples' has the wrong type"),
            std::string::npos);
  VerifyRequest none;
  EXPECT_NE(error_of([&] { none.validate(); }).find("at least one trace"), std::string::npos);
  VerifyRequest two = small_request({"a.safetensors", "b.safetensors"});
  two.plot_path = "p.svg";
  EXPECT_NE(error_of([&] { two.validate(); }).find("plot takes one trace"), std::string::npos);
  VerifyRequest kv = small_request({"a.safetensors"});
  kv.run.gqa = "kv";
  EXPECT_NE(error_of([&] { kv.validate(); }).find("gqa must be query"), std::string::npos);
  VerifyRequest ground = small_request({"a.safetensors"});
  ground.checks.ground = 40;
  EXPECT_NE(error_of([&] { ground.validate(); }).find("ground"), std::string::npos);
  // An unknown id is refused with the ids verify runs, not the closed-loop ones it refuses.
  VerifyRequest unknown = small_request({"a.safetensors"});
  unknown.checks.checks = {"C99"};
  const std::string why = error_of([&] { unknown.validate(); });
  EXPECT_NE(
      why.find(
          "unknown check id 'C99' (verify runs C1..C27, D1..D11, E1..E3, ADA1..ADA3, SNAP1, SINK1, SCIS1 and TOVA1)"),
      std::string::npos)
      << why;
}

// E3 reads the trace's token ids as words: on a synthetic trace (random ids) it is not applicable,
// which the report says, instead of a correlation over ids that are not words.
TEST(VerifyRun, WordChecksAreNotApplicableWithoutText) {
  const fs::path d = fresh_dir("verify-run", "e3");
  const std::string path = write_small_trace(d, "a", 1);
  VerifyRequest req = small_request({path});
  req.checks.checks = {"E2", "E3"};
  const auto r = run_verify(req, WorkTeam(1));
  ASSERT_TRUE(r.has_value());
  const nlohmann::json& meta = r->traces.front().meta;
  EXPECT_EQ(meta.at("not_applicable").at("E3"), "a synthetic trace's token ids are random, not text");
  for (const auto& s : r->traces.front().summaries) EXPECT_NE(s.id, "E3");
  // The same heads with their ids marked as text (a recording's metadata) do get E3's records.
  Trace text = read_trace(path);
  text.metadata = {{"model", "recorded"}, {"text_source", "test"}};
  write_trace(path, text);
  const auto t = run_verify(req, WorkTeam(1));
  EXPECT_FALSE(t->traces.front().meta.contains("not_applicable"));
  EXPECT_TRUE(std::any_of(t->traces.front().summaries.begin(), t->traces.front().summaries.end(),
                          [](const ClaimSummary& s) { return s.id == "E3"; }));
  fs::remove_all(d);
}
