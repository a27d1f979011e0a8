// The sign test and its power: known p-values, the power against an enumeration of every outcome
// and against simulated studies, the smallest sufficient size, and the refusals.
#include "kvo/studies/paired_power.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kvo/core/error.hpp"

using namespace kvo;
using namespace kvo::studies;

namespace {

double choose(int n, int k) { return std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0)); }

// Every (better, worse) outcome of n instances, each better with probability pb, worse with pw.
double enumerated_power(int n, double discordance, double difference, double alpha) {
  const double pb = (discordance + difference) / 2, pw = (discordance - difference) / 2, tie = 1 - discordance;
  double power = 0;
  for (int b = 0; b <= n; ++b)
    for (int w = 0; b + w <= n; ++w) {
      if (sign_test_p(b, w) >= alpha) continue;
      power += choose(n, b) * choose(n - b, w) * std::pow(pb, b) * std::pow(pw, w) * std::pow(tie, n - b - w);
    }
  return power;
}

}  // namespace

TEST(SignTest, ExactTwoSidedPValues) {
  EXPECT_DOUBLE_EQ(sign_test_p(0, 0), 1.0);
  EXPECT_DOUBLE_EQ(sign_test_p(3, 3), 1.0);
  EXPECT_NEAR(sign_test_p(0, 8), 2.0 / 256, 1e-15);
  EXPECT_NEAR(sign_test_p(8, 0), 2.0 / 256, 1e-15);
  EXPECT_NEAR(sign_test_p(1, 9), 2.0 * 11 / 1024, 1e-15);
  EXPECT_NEAR(sign_test_p(42, 1), 2.0 * 44 / std::pow(2.0, 43), 1e-20);
}

TEST(PairedPower, EqualsAnEnumerationOfEveryOutcome) {
  for (int n : {1, 7, 20, 33})
    for (double d : {0.1, 0.3, 0.7, 1.0})
      EXPECT_NEAR(sign_test_power(n, d, 0.1, 0.01), enumerated_power(n, d, 0.1, 0.01), 1e-12) << n << " " << d;
  EXPECT_NEAR(sign_test_power(25, 0.5, 0.3, 0.05), enumerated_power(25, 0.5, 0.3, 0.05), 1e-12);
}

TEST(PairedPower, AgreesWithSimulatedStudies) {
  // 4 000 seeded studies of 150 instances whose rows disagree on 25% and differ by 0.1.
  const int n = 150, studies = 4000;
  const double discordance = 0.25, difference = 0.1;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  int rejected = 0;
  for (int s = 0; s < studies; ++s) {
    int b = 0, w = 0;
    for (int i = 0; i < n; ++i) {
      const double x = u(rng);
      if (x < (discordance + difference) / 2)
        ++b;
      else if (x < discordance)
        ++w;
    }
    rejected += sign_test_p(b, w) < 0.01;
  }
  const double power = sign_test_power(n, discordance, difference, 0.01);
  const double se = std::sqrt(power * (1 - power) / studies);
  EXPECT_NEAR(static_cast<double>(rejected) / studies, power, 4 * se);
}

TEST(PairedPower, SmallestSufficientSize) {
  // Discordance equal to the difference: every disagreement favours one row, and 8 of them are
  // the least the test needs (2 / 2^8 < 0.01 <= 2 / 2^7), so the power is P(Bin(n, 0.1) >= 8).
  const auto at_least_8 = [](int n) {
    double below = 0;
    for (int k = 0; k < 8; ++k) below += choose(n, k) * std::pow(0.1, k) * std::pow(0.9, n - k);
    return 1 - below;
  };
  const int n = instances_for_power(0.1, 0.1, 0.01, 0.8, 5000);
  ASSERT_GT(n, 0);
  EXPECT_GE(at_least_8(n), 0.8);
  EXPECT_LT(at_least_8(n - 1), 0.8);
  EXPECT_NEAR(sign_test_power(n, 0.1, 0.1, 0.01), at_least_8(n), 1e-12);
  // More disagreement is more noise: more instances.
  const int wider = instances_for_power(0.3, 0.1, 0.01, 0.8, 5000);
  EXPECT_GT(wider, n);
  EXPECT_GE(sign_test_power(wider, 0.3, 0.1, 0.01), 0.8);
  EXPECT_EQ(instances_for_power(0.3, 0.1, 0.01, 0.8, 50), 0);  // beyond the search
}

TEST(PairedPower, TableForAStudyDesign) {
  PairedPowerRequest req;
  req.discordance = {0.1, 0.2};
  req.instances = 240;
  const PairedPowerResult r = paired_power(req);
  ASSERT_EQ(r.rows.size(), 2U);
  EXPECT_EQ(r.rows[0].instances, instances_for_power(0.1, 0.1, 0.01, 0.8, 5000));
  EXPECT_GE(r.rows[1].power_reached, 0.8);
  EXPECT_NEAR(r.rows[1].power_at_size, sign_test_power(240, 0.2, 0.1, 0.01), 1e-12);
  EXPECT_EQ(r.to_json()["rows"][1]["instances"], r.rows[1].instances);
  EXPECT_NE(r.report().text().find("power at 240"), std::string::npos);
}

TEST(PairedPower, RefusesWhatCannotBe) {
  EXPECT_THROW(sign_test_power(10, 0.05, 0.1, 0.01), Error);  // disagree less than they differ
  EXPECT_THROW(sign_test_power(10, 1.5, 0.1, 0.01), Error);
  EXPECT_THROW(sign_test_power(0, 0.2, 0.1, 0.01), Error);
  EXPECT_THROW(instances_for_power(0.2, 0.1, 0.01, 1.0, 100), Error);
  PairedPowerRequest req;
  req.discordance = {0.05};
  try {
    req.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("discordance: 0.05"), std::string::npos) << e.what();
  }
  req = {};
  req.alpha = 0.0;
  EXPECT_THROW(req.validate(), Error);
  req = {};
  req.difference = 0.0;
  EXPECT_THROW(req.validate(), Error);
}
