// `replay` as a library call (core/replay_run.hpp): the request resolves against a trace into the
// options the replay engine takes, its JSON form round-trips, and the per-step records and the
// per-layer summary are those of the result.
#include "kvo/core/replay_run.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "test_support.hpp"

using namespace kvo;
using test::error_of;

TEST(ReplayRun, TheRequestGivesTheEngineItsOptionsAndTheViewsReadTheResult) {
  const Trace tr = test::synthetic_layer(3, 1, 20, 16, 4, 7);
  ReplayRequest req;
  req.policy = PolicyId::Tova;
  req.run.budget = "6";
  const ReplayOptions o = req.options(tr);
  EXPECT_EQ(o.run.policy.id, PolicyId::Tova);
  EXPECT_EQ(o.run.prompt_len, 4);  // the trace's
  const ReplayResult r = replay(tr, o);
  std::ostringstream lines;
  write_step_records(lines, r, false);
  std::istringstream in(lines.str());
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const auto& h = r.heads[static_cast<size_t>(count / 20)];
    EXPECT_EQ(j["head"], h.head);
    EXPECT_EQ(j["kept"], h.steps[static_cast<size_t>(count % 20)].kept);
    EXPECT_FALSE(j.contains("probs"));
    ++count;
  }
  EXPECT_EQ(count, 3 * 20);
  const auto summary = replay_layer_summary(r);
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].heads, 3);
  EXPECT_EQ(summary[0].k, 6);
  long evictions = 0;
  double mean = 0, worst = 1;
  for (const auto& h : r.heads) {
    evictions += h.evictions;
    mean += h.mean_retained_mass / 3;
    worst = std::min(worst, h.mean_retained_mass);
  }
  EXPECT_EQ(summary[0].evictions, evictions);
  EXPECT_NEAR(summary[0].mean_retained_mass, mean, 1e-15);
  EXPECT_EQ(summary[0].worst_retained_mass, worst);
}

TEST(ReplayRun, RequestsAreValidatedAndRoundTripAsJson) {
  ReplayRequest req;
  req.run.history = 0;
  EXPECT_NE(error_of([&] { req.validate(); }).find("history must be >= 1"), std::string::npos);
  req = {};
  req.run.budget = "64";
  const Trace tr = test::synthetic_layer(1, 1, 20, 16, 0, 1);
  EXPECT_NE(error_of([&] { req.options(tr); }).find("larger than the sequence"), std::string::npos);
  req.policy = PolicyId::Scissorhands;
  req.record_probs = true;
  req.run.layers = {0};
  const ReplayRequest back = ReplayRequest::from_json(req.to_json());
  EXPECT_EQ(back.to_json(), req.to_json());
  EXPECT_EQ(back.policy, PolicyId::Scissorhands);
  EXPECT_NE(error_of([] { ReplayRequest::from_json({{"policy", "nope"}}); }).find("unknown policy"), std::string::npos);
  EXPECT_NE(error_of([] {
              ReplayRequest::from_json({{"probs", true}});
            }).find("replay request: unknown field 'probs'"),
            std::string::npos);
}
