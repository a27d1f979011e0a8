// The power-law fit of E2 on samples of known law: a Pareto sample is consistent with its own
// exponent, an exponential and a log-normal sample are told apart, the closed forms hold at a
// given x_min, bad input is refused in one line, and the bootstrap is seeded.
#include "kvo/proofs_check/power_law.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kvo/core/error.hpp"

using namespace kvo;

namespace {

std::vector<double> pareto(int n, double alpha, double xmin, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> x(static_cast<size_t>(n));
  for (auto& v : x) v = xmin * std::pow(1.0 - u(g), -1.0 / (alpha - 1.0));
  return x;
}

std::vector<double> exponential(int n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::exponential_distribution<double> e(1.0);
  std::vector<double> x(static_cast<size_t>(n));
  for (auto& v : x) v = 1.0 + e(g);
  return x;
}

std::vector<double> lognormal(int n, double mu, double sigma, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::lognormal_distribution<double> l(mu, sigma);
  std::vector<double> x(static_cast<size_t>(n));
  for (auto& v : x) v = l(g);
  return x;
}

}  // namespace

TEST(PowerLaw, AParetoSampleIsConsistentWithItsExponent) {
  PowerLawOptions o;
  o.bootstrap = 50;
  const PowerLawFit f = fit_power_law(pareto(2000, 2.5, 1.0, 3), o);
  EXPECT_NEAR(f.alpha, 2.5, 0.1);
  EXPECT_LT(f.xmin, 1.2);
  EXPECT_GE(f.p_value, 0.1);
  EXPECT_EQ(f.verdict(), "consistent") << f.lognormal.ratio << " " << f.exponential.ratio;
  EXPECT_GT(f.exponential.ratio, 0.0);  // a power law's tail is far heavier than an exponential's
}

TEST(PowerLaw, AnExponentialSampleIsNotAPowerLaw) {
  PowerLawOptions o;
  o.bootstrap = 50;
  const PowerLawFit f = fit_power_law(exponential(2000, 4), o);
  EXPECT_NE(f.verdict(), "consistent");
  EXPECT_LT(f.exponential.ratio, 0.0);
}

TEST(PowerLaw, TheLogNormalAlternativeRecoversItsParameters) {
  const std::vector<double> x = lognormal(5000, 0.5, 0.8, 5);
  const double lowest = *std::min_element(x.begin(), x.end());
  const PowerLawFit f = fit_power_law_at(x, lowest);  // the whole sample: the truncation is immaterial
  EXPECT_NEAR(f.lognormal.a, 0.5, 0.05);
  EXPECT_NEAR(f.lognormal.b, 0.8, 0.05);
  EXPECT_LT(f.lognormal.ratio, 0.0);
  EXPECT_LT(f.lognormal.p_value, 0.01);
}

TEST(PowerLaw, AtAGivenXminTheClosedFormsHold) {
  const std::vector<double> x = {1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0};
  const PowerLawFit f = fit_power_law_at(x, 2.0);
  double logs = 0.0;
  for (double v : {2.0, 3.0, 5.0, 8.0, 13.0, 21.0}) logs += std::log(v / 2.0);
  EXPECT_DOUBLE_EQ(f.alpha, 1.0 + 6.0 / logs);
  EXPECT_EQ(f.n_tail, 6);
  EXPECT_EQ(f.n, 7);
  // KS over the tail's values with S(x) = share of the tail below x.
  double ks = 0.0;
  const double tail[] = {2.0, 3.0, 5.0, 8.0, 13.0, 21.0};
  for (int i = 0; i < 6; ++i) ks = std::max(ks, std::fabs(1.0 - std::pow(tail[i] / 2.0, 1.0 - f.alpha) - i / 6.0));
  EXPECT_NEAR(f.ks, ks, 1e-15);
  double excess = 0.0;
  for (double v : tail) excess += v - 2.0;
  EXPECT_DOUBLE_EQ(f.exponential.a, 6.0 / excess);
  EXPECT_EQ(f.p_value, -1.0);  // no bootstrap
}

TEST(PowerLaw, TheBootstrapIsSeeded) {
  PowerLawOptions o;
  o.bootstrap = 20;
  const std::vector<double> x = pareto(300, 2.2, 1.0, 9);
  EXPECT_EQ(fit_power_law(x, o).p_value, fit_power_law(x, o).p_value);
  o.bootstrap = 0;
  EXPECT_EQ(fit_power_law(x, o).p_value, -1.0);
}

TEST(PowerLaw, BadInputIsRefusedInOneLine) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message([] {
              fit_power_law(std::vector<double>{1, 2, -3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
            }),
            "power-law fit: every value must be finite and positive");
  EXPECT_EQ(message([] {
              fit_power_law(std::vector<double>{1, 2, 3});
            }),
            "power-law fit: needs more than 10 values, 3 given");
  EXPECT_EQ(message([] {
              fit_power_law_at(std::vector<double>{1, 2, 3}, 2.5);
            }),
            "power-law fit: x_min must be one of the values");
  PowerLawOptions o;
  o.min_tail = 1;
  EXPECT_EQ(message([&] { fit_power_law(std::vector<double>(20, 1.0), o); }),
            "power-law fit: min_tail must be at least 2");
}
