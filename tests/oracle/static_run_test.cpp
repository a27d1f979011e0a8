// The static oracle over a trace as a library call (oracle/static_run.hpp): each solve equals a
// brute-force optimum of the same objective, the request refuses what it cannot run naming the
// option, and its JSON form round-trips.
#include "kvo/oracle/static_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <functional>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "test_support.hpp"

using namespace kvo;
using test::error_of;

namespace {

// The best sum of k weights among w[0..i] (every subset enumerated).
double best_k_sum(const std::vector<double>& w, int k) {
  const int n = static_cast<int>(w.size());
  double best = 0;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    if (std::popcount(mask) > k) continue;
    double s = 0;
    for (int j = 0; j < n; ++j)
      if (mask & (1u << j)) s += w[static_cast<size_t>(j)];
    best = std::max(best, s);
  }
  return best;
}

}  // namespace

TEST(StaticRun, EverySolveIsTheBruteForceOptimum) {
  const Trace tr = test::synthetic_layer(2, 1, 14, 16, 0, 3);
  for (const std::string objective : {"dense-acc", "mass"}) {
    StaticOracleRequest req;
    req.run.objective = objective;
    req.run.budget = "3";
    req.every = 4;
    const StaticOracleResult r = run_static_oracle(tr, req);
    ASSERT_EQ(r.heads.size(), 2u);
    EXPECT_EQ(r.records().size(), 2u * 5u);  // steps 0, 4, 8, 12 and the last, 13
    for (const auto& head : r.heads) {
      const Eigen::MatrixXd a = dense_attention(HeadView(tr, head.layer, head.head));
      ASSERT_EQ(head.solves.back().step, 13);
      for (const auto& s : head.solves) {
        std::vector<double> w(static_cast<size_t>(s.step) + 1, 0.0);
        for (int j = 0; j <= s.step; ++j)
          for (int i = j; i <= s.step; ++i)
            if (objective == "mass" ? i == s.step : true) w[static_cast<size_t>(j)] += a(i, j);
        EXPECT_NEAR(s.solution.value, best_k_sum(w, head.k), 1e-12) << objective << " step " << s.step;
        EXPECT_TRUE(s.solution.exact);
      }
    }
  }
}

TEST(StaticRun, RequestsAreValidatedNamingTheOption) {
  const Trace tr = test::synthetic_layer(1, 1, 10, 16, 0, 1);
  StaticOracleRequest req;
  req.run.objective = "acc";
  EXPECT_NE(error_of([&] { run_static_oracle(tr, req); }).find("objective is dense-acc"), std::string::npos);
  req = {};
  req.every = 0;
  EXPECT_NE(error_of([&] { req.validate(); }).find("every must be >= 1"), std::string::npos);
  req = {};
  req.run.gqa = "kv-mean";
  EXPECT_NE(error_of([&] { req.validate(); }).find("gqa must be query"), std::string::npos);
  req = {};
  req.run.budget = "100";
  EXPECT_NE(error_of([&] { run_static_oracle(tr, req); }).find("larger than the sequence"), std::string::npos);
}

TEST(StaticRun, JsonFormRoundTrips) {
  StaticOracleRequest req;
  req.run.objective = "fl";
  req.run.window = 4;
  req.every = 3;
  req.node_limit = 99;
  const StaticOracleRequest back = StaticOracleRequest::from_json(req.to_json());
  EXPECT_EQ(back.to_json(), req.to_json());
  EXPECT_EQ(StaticOracleRequest::from_json({{"every", 2}}).run.objective, "dense-acc");
  EXPECT_NE(error_of([] {
              StaticOracleRequest::from_json({{"evry", 2}});
            }).find("unknown field 'evry'"),
            std::string::npos);
}
