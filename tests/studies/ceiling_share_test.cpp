// The ceiling share: presses paired with the ceiling by instance, their shares and intervals, the
// paired test, kvpress's ratio labels, and the refusals of records that cannot be paired.
#include "kvo/studies/ceiling_share.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"

using namespace kvo;
using namespace kvo::studies;

namespace {

std::vector<CeilingRecord> records(const std::string& press, double ratio, const std::vector<double>& scores) {
  std::vector<CeilingRecord> out;
  for (size_t i = 0; i < scores.size(); ++i)
    out.push_back({press, ratio, std::string{"i"}.append(std::to_string(i)), scores[i]});
  return out;
}

std::vector<CeilingRecord> join(std::vector<std::vector<CeilingRecord>> parts) {
  std::vector<CeilingRecord> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST(CeilingShare, PairsPressesWithTheCeilingPerRatio) {
  const std::vector<double> ceiling = {1, 1, 1, 1, 0, 1, 1, 1};
  const std::vector<double> half = {1, 0, 1, 0, 0, 1, 0, 1};  // 4 of the ceiling's 7
  const auto rs = join({records("knorm", 0.5, half), records("kvoracle_optimum", 0.5, ceiling),
                        records("kvoracle_optimum", 0.9375, ceiling), records("knorm", 0.9375, ceiling)});
  const CeilingShareResult r = ceiling_share(rs, {});
  ASSERT_EQ(r.rows.size(), 4U);
  EXPECT_EQ(r.rows[0].press, "kvoracle_optimum");  // the ceiling's own row first, share 1
  EXPECT_DOUBLE_EQ(r.rows[0].share, 1.0);
  EXPECT_DOUBLE_EQ(r.rows[0].p_value, 1.0);
  const CeilingShareRow& knorm = r.rows[1];
  EXPECT_EQ(knorm.press, "knorm");
  EXPECT_EQ(knorm.instances, 8);
  EXPECT_DOUBLE_EQ(knorm.score, 0.5);
  EXPECT_DOUBLE_EQ(knorm.ceiling, 7.0 / 8);
  EXPECT_DOUBLE_EQ(knorm.share, 4.0 / 7);
  EXPECT_LE(knorm.share_low, knorm.share);
  EXPECT_GE(knorm.share_high, knorm.share);
  EXPECT_LE(knorm.share_high, 1.0);        // the press never beats the ceiling on an instance
  EXPECT_NEAR(knorm.p_value, 0.25, 0.05);  // three differences, all of one sign: exactly 2/8
  EXPECT_DOUBLE_EQ(r.rows[3].share, 1.0);  // equal scores at 16:1
  // Reproducible: the same seed gives the same intervals.
  const CeilingShareResult again = ceiling_share(rs, {});
  EXPECT_EQ(again.to_json(), r.to_json());
  const std::string text = r.report().text();
  EXPECT_NE(text.find("16:1"), std::string::npos);
  EXPECT_EQ(r.report().plots().front().name, "ceiling-share.svg");
}

TEST(CeilingShare, ALargeGapIsSignificant) {
  std::vector<double> ceiling(60, 1.0), press(60, 0.0);
  for (int i = 0; i < 10; ++i) press[i] = 1.0;
  const auto r =
      ceiling_share(join({records("a", 0.25, press), records("kvoracle_optimum", 0.25, ceiling)}), {.resamples = 4000});
  EXPECT_LT(r.rows[1].p_value, 0.001);
  EXPECT_NEAR(r.rows[1].share, 1.0 / 6, 1e-12);
}

TEST(CeilingShare, LabelsRatiosAsKvpressDoes) {
  EXPECT_EQ(compression_label(0.5), "0.50");
  EXPECT_EQ(compression_label(0.875), "8:1");
  EXPECT_EQ(compression_label(0.9375), "16:1");
  EXPECT_EQ(compression_label(0.96875), "32:1");
  EXPECT_EQ(compression_label(0.75), "0.75");
}

TEST(CeilingShare, RefusesRecordsThatCannotBePaired) {
  const auto ceiling = records("kvoracle_optimum", 0.5, {1, 1});
  EXPECT_THROW(ceiling_share(records("a", 0.5, {1, 0}), {}), Error);  // no ceiling at 0.5
  auto twice = join({ceiling, records("a", 0.5, {1, 0}), records("a", 0.5, {1})});
  EXPECT_THROW(ceiling_share(twice, {}), Error);
  auto unknown = join({ceiling, std::vector<CeilingRecord>{{"a", 0.5, "other", 1.0}}});
  EXPECT_THROW(ceiling_share(unknown, {}), Error);
  EXPECT_THROW(ceiling_share({}, {}), Error);
  EXPECT_THROW(ceiling_share(ceiling, {.resamples = 10}), Error);
}
