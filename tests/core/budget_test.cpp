#include "kvo/core/budget.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"

using namespace kvo;

TEST(Budget, ParsesTokensRatiosAndPercentages) {
  EXPECT_EQ(Amount::parse("64").resolve(1000), 64);
  EXPECT_EQ(Amount::parse("0.2").resolve(1000), 200);
  EXPECT_EQ(Amount::parse("20%").resolve(1000), 200);
  EXPECT_EQ(Amount::parse("0.001").resolve(100), 1);  // a positive ratio never resolves to 0
  EXPECT_THROW(Amount::parse("abc"), Error);
  EXPECT_THROW(Amount::parse("-3"), Error);
  EXPECT_THROW(Amount::parse("0"), Error);
  EXPECT_THROW(Amount::parse("1.5"), Error);
  EXPECT_THROW(Amount::parse("150%"), Error);
  EXPECT_EQ(Amount::parse("0", true).resolve(10), 0);
}

TEST(Budget, SplitsHeavyAndRecentEvenlyByDefault) {
  const Budget b(Amount::parse("0.2"));
  const auto r = b.resolve(1000, 0, 0);
  EXPECT_EQ(r.total, 200);
  EXPECT_EQ(r.recent, 100);
  EXPECT_EQ(r.heavy, 100);
  const Budget b2(Amount::parse("64"), Amount::parse("0.25"));
  EXPECT_EQ(b2.resolve(1000, 0, 0).recent, 16);
  const Budget b3(Amount::parse("64"), Amount::parse("0", true));
  EXPECT_EQ(b3.resolve(1000, 0, 0).heavy, 64);
}

TEST(Budget, OverridesPerLayerAndHead) {
  Budget b(Amount::parse("0.5"));
  b.add_override("L1=0.1");
  b.add_override("L1H2=7");
  EXPECT_EQ(b.resolve(100, 0, 2).total, 50);
  EXPECT_EQ(b.resolve(100, 1, 0).total, 10);
  EXPECT_EQ(b.resolve(100, 1, 2).total, 7);
  EXPECT_THROW(b.add_override("layer1=3"), Error);
}

TEST(Budget, RejectsBudgetsLargerThanTheSequence) {
  const Budget b(Amount::parse("200"));
  EXPECT_THROW(b.resolve(100, 0, 0), Error);
  const Budget r(Amount::parse("10"), Amount::parse("11"));
  EXPECT_THROW(r.resolve(100, 0, 0), Error);
}
