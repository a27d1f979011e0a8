// `kvoracle oracle offline` as a library call (oracle/offline_run.hpp): the heads are those of
// competitive_ratios() on the same trace, the summary is their per-policy means and worst cases,
// the trace is named as the caller names it, and the request's JSON form and refusals.
#include "kvo/oracle/offline_run.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "kvo/core/policy_registry.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/trace_io.hpp"
#include "test_support.hpp"

using namespace kvo;
using kvo::test::error_of;
namespace fs = std::filesystem;

TEST(OfflineRun, HeadsAreTheCompetitiveRatiosAndTheSummaryTheirMeans) {
  const fs::path d = fs::temp_directory_path() / ("kvo-offline-run-" + std::to_string(::getpid()));
  fs::create_directories(d);
  const std::string path = (d / "t.safetensors").string();
  const Trace tr = test::synthetic_layer(3, 1, 48, 12, 8, 5);
  write_trace(path, tr);
  OfflineOracleRequest req;
  req.run.budget = "8";
  req.policies = {PolicyId::H2O, PolicyId::Tova};
  const Trace back = read_trace(path);
  const auto r = run_offline_oracle(back, req, WorkTeam(2), path);
  ASSERT_TRUE(r.has_value());

  CompetitiveOptions co;
  for (const PolicyId id : req.policies) {
    ReplayOptions ro;
    ro.run = req.run.build(id, &back);
    co.policies.push_back(ro);
  }
  const std::vector<HeadCompetitive> direct = competitive_ratios(back, co);
  ASSERT_EQ(r->heads.size(), direct.size());
  ASSERT_EQ(r->policies.size(), 2u);
  for (size_t p = 0; p < 2; ++p) {
    double mean = 0, worst = 1e300;
    for (const auto& h : direct) {
      mean += h.policies[p].ratio;
      worst = std::min(worst, h.policies[p].ratio);
    }
    EXPECT_DOUBLE_EQ(r->policies[p].mean_ratio, mean / static_cast<double>(direct.size()));
    EXPECT_EQ(r->policies[p].worst_ratio, worst);
    EXPECT_LE(r->policies[p].worst_ratio, 1.0 + 1e-12);
  }
  EXPECT_EQ(r->policies[0].policy, policy_name(PolicyId::H2O));
  EXPECT_EQ(r->violations, 0);
  EXPECT_LE(r->opt_dyn_sum, r->static_sum * (1 + 1e-12));
  EXPECT_EQ(r->to_json().at("trace"), path);
  EXPECT_EQ(r->summary_json().at("heads"), direct.size());
  fs::remove_all(d);
}

TEST(OfflineRun, RequestRoundTripsThroughJsonAndRefusesWhatCannotRun) {
  OfflineOracleRequest req;
  req.forced_window = 4;
  req.policies = {PolicyId::Streaming};
  const OfflineOracleRequest back = OfflineOracleRequest::from_json(req.to_json());
  EXPECT_EQ(back.to_json(), req.to_json());
  EXPECT_NE(error_of([] {
              OfflineOracleRequest::from_json({{"window", 3}});
            }).find("unknown field 'window'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              OfflineOracleRequest::from_json({{"forced_window", "3"}});
            }).find("offline oracle request: 'forced_window' has the wrong type"),
            std::string::npos);
  EXPECT_NE(error_of([] { OfflineOracleRequest::from_json(nlohmann::json::array()); }).find("expected a JSON object"),
            std::string::npos);
  OfflineOracleRequest bad = req;
  bad.forced_window = -1;
  EXPECT_NE(error_of([&] { bad.validate(); }).find("forced_window must be >= 0"), std::string::npos);
  bad = req;
  bad.policies.clear();
  EXPECT_NE(error_of([&] { bad.validate(); }).find("at least one policy"), std::string::npos);
}
