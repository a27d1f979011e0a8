#include "kvo/checks/greedy_vs_static.hpp"

#include <gtest/gtest.h>

#include <numbers>

#include "kvo/checks/static_greedy_check.hpp"
#include "kvo/checks/svg_plot.hpp"
#include "kvo/core/attention.hpp"
#include "kvo/core/synth.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

namespace {
ReplayResult run(const Trace& tr, const std::string& p, const std::string& budget) {
  ReplayOptions o;
  o.run.policy = PolicySpec::named(p);
  o.run.budget = Budget(Amount::parse(budget));
  return replay(tr, o);
}
}  // namespace

TEST(GreedyVsStatic, FullCacheHasRatioOne) {
  const Trace tr = random_trace(1, 1, 1, 30, 8, 61);
  const auto r = run(tr, "full", "30");
  const auto g = greedy_vs_static(tr, r, Concave::Identity, 0);
  for (double rho : g.heads[0].rho) EXPECT_NEAR(rho, 1.0, 1e-12);
}

// A trace built so that a sliding window provably misses the heavy hitter: key 0 takes almost all
// attention, so the window's dense accumulated value after it slides past is tiny.
TEST(GreedyVsStatic, WindowMissesAConstructedHeavyHitter) {
  Trace tr = random_trace(1, 1, 1, 40, 4, 62, 1.0);
  for (int j = 0; j < 40; ++j)
    for (int x = 0; x < 4; ++x) {
      tr.k[0][j * 4 + x] = j == 0 ? 10.0f : 0.0f;
      tr.q[0][j * 4 + x] = 1.0f;
    }
  const auto w = greedy_vs_static(tr, run(tr, "window", "4"), Concave::Identity, 0);
  const auto h = greedy_vs_static(tr, run(tr, "h2o", "4"), Concave::Identity, 0);
  EXPECT_LT(w.heads[0].stats.min, 0.2);
  EXPECT_GT(w.heads[0].stats.below_line, 0);
  EXPECT_GT(h.heads[0].stats.min, 0.9);  // H2O keeps the heavy hitter
}

// The replay's recorded objective A equals f(S_i) as the check recomputes it.
TEST(GreedyVsStatic, ReplayRecordsTheAccumulatedObjective) {
  const Trace tr = random_trace(1, 2, 1, 40, 8, 63);
  const auto r = run(tr, "h2o", "6");
  const auto g = greedy_vs_static(tr, r, Concave::Identity, 0);
  const Eigen::MatrixXd a = dense_attention(HeadView(tr, 0, 1));
  for (int i = 0; i < 40; ++i) {
    double want = 0;
    for (int j : r.heads[1].steps[i].kept) want += a.col(j).segment(j, i - j + 1).sum();
    EXPECT_NEAR(r.heads[1].steps[i].accumulated, want, 1e-10);
    EXPECT_LE(g.heads[1].rho[i], 1.0 + 1e-12);
  }
}

TEST(GreedyVsStatic, SummaryStatistics) {
  const std::vector<double> rho = {1.0, 1.0, 0.5, 0.7, 0.9};
  const auto s = summarize_ratios(rho, 2);
  EXPECT_EQ(s.steps, 3);
  EXPECT_DOUBLE_EQ(s.min, 0.5);
  EXPECT_EQ(s.worst_step, 2);
  EXPECT_DOUBLE_EQ(s.median, 0.7);
  EXPECT_EQ(s.below_line, 1);
}

TEST(StaticGreedyCheck, HoldsOnASyntheticTrace) {
  SynthOptions so;
  so.tokens = 96;
  const Trace tr = synthesize(so);
  const auto r = run(tr, "h2o", "0.3");
  StaticGreedyOptions o;
  o.samples_per_head = 3;
  const auto samples = static_greedy_check(tr, r, o);
  EXPECT_EQ(samples.size(), r.heads.size() * 3);
  for (const auto& s : samples) {
    EXPECT_TRUE(s.holds);
    EXPECT_TRUE(s.exact);
    EXPECT_GE(s.greedy, s.factor * s.opt - 1e-9);
  }
}

TEST(SvgPlot, DrawsEverySeriesReferenceLineAndLegend) {
  LinePlot p;
  p.title = "a < b";
  p.series.push_back({"one", {0, 1, 2}, {0.5, 0.7, 2.0}, false});
  p.series.push_back({"two", {0, 2}, {0.1, 0.2}, true});
  p.lines.push_back({"1 - 1/e", 1.0 - 1.0 / std::numbers::e});
  const std::string svg = p.svg();
  size_t polylines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++polylines;
  EXPECT_EQ(polylines, 2u);
  EXPECT_NE(svg.find("a &lt; b"), std::string::npos);  // escaped title
  EXPECT_NE(svg.find(">two<"), std::string::npos);
  EXPECT_NE(svg.find("1 - 1/e"), std::string::npos);
  EXPECT_EQ(svg.rfind("</svg>"), svg.size() - 7);
}
