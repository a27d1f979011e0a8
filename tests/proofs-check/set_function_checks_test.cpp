// The classic-bound checks on functions whose answer is known: submodular families where every
// bound must hold, and constructed non-submodular / non-monotone functions the scans must catch.
#include "kvo/proofs_check/set_function_checks.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

namespace {

// f(S) = (sum_{j in S} w_j)^2: monotone for w >= 0 and strictly supermodular (not submodular).
class SquaredSum final : public SetFunction {
 public:
  explicit SquaredSum(std::vector<double> w) : w_(std::move(w)) {}
  int ground_size() const override { return static_cast<int>(w_.size()); }
  SetFnTraits traits() const override { return {"squared-sum", true, false}; }
  struct M : Memo {
    double sum = 0.0;
    std::unique_ptr<Memo> clone() const override { return std::make_unique<M>(*this); }
  };
  std::unique_ptr<Memo> empty_memo() const override { return std::make_unique<M>(); }
  double gain(const Memo& m, int j) const override {
    const double s = static_cast<const M&>(m).sum;
    return (s + w_[static_cast<size_t>(j)]) * (s + w_[static_cast<size_t>(j)]) - s * s;
  }
  void add(Memo& m, int j) const override {
    static_cast<M&>(m).sum += w_[static_cast<size_t>(j)];
    m.members.push_back(j);
  }
  double value(const Memo& m) const override { return static_cast<const M&>(m).sum * static_cast<const M&>(m).sum; }

 private:
  std::vector<double> w_;
};

}  // namespace

TEST(SetFunctionChecks, SubmodularFamiliesPassEveryBound) {
  std::mt19937_64 g(11);
  for (int t = 0; t < 200; ++t) {
    const Family fam = monotone_families()[static_cast<size_t>(t) % monotone_families().size()];
    const int n = 6 + t % 7, k = 1 + t % 4;
    const auto f = random_function(fam, n, g);
    const auto scan = scan_submodularity(*f, {}, 60, static_cast<std::uint64_t>(t));
    EXPECT_EQ(scan.violations, 0);
    EXPECT_EQ(scan.monotone_violations, 0);
    const StaticBounds b = static_bounds(*f, k);
    EXPECT_TRUE(b.nwf_holds()) << t;
    EXPECT_TRUE(b.curvature_holds()) << t;
    EXPECT_TRUE(b.aposteriori_holds()) << t;
    EXPECT_GE(b.nwf, 1.0 - 1.0 / std::numbers::e);
    std::vector<int> u = {0, 1};
    EXPECT_GE(submodularity_ratio(*f, u, k), 1.0 - 1e-9) << t;
    EXPECT_TRUE(is_monotone_exhaustive(*f));
  }
}

TEST(SetFunctionChecks, ModularHasZeroCurvatureAndExactGreedy) {
  const ModularConcave f({0.5, 2.0, 1.0, 0.25}, Concave::Identity);
  EXPECT_NEAR(total_curvature(f), 0.0, 1e-12);
  const StaticBounds b = static_bounds(f, 2);
  EXPECT_DOUBLE_EQ(b.greedy, b.opt);
  EXPECT_DOUBLE_EQ(b.curvature_factor, 1.0);
}

TEST(SetFunctionChecks, SupermodularFunctionIsCaughtAndHasGammaBelowOne) {
  const SquaredSum f({1.0, 2.0, 3.0, 0.5, 1.5, 2.5});
  const auto scan = scan_submodularity(f, {}, 200, 3);
  EXPECT_GT(scan.violations, 0);
  EXPECT_GT(scan.worst, 0.0);
  EXPECT_EQ(scan.monotone_violations, 0);
  // gamma = sum of singleton gains / joint gain = (1 + 4) / 9 at L = {}, S = {0, 1}: below 1.
  std::vector<int> u = {};
  const double gamma = submodularity_ratio(f, u, 2);
  EXPECT_LT(gamma, 1.0);
  EXPECT_NEAR(gamma, (9.0 + 6.25) / 30.25, 1e-12);  // worst pair {2, 5}: (3^2 + 2.5^2) / 5.5^2
}

TEST(SetFunctionChecks, NegativeWeightBreaksMonotonicity) {
  const ModularConcave f({1.0, -0.5, 2.0, 0.3}, Concave::Identity);
  const auto scan = scan_submodularity(f, {}, 300, 5);
  EXPECT_GT(scan.monotone_violations, 0);
  EXPECT_NEAR(scan.worst_monotone, 0.5, 1e-12);
  EXPECT_FALSE(is_monotone_exhaustive(f));
}

TEST(SetFunctionChecks, ScanRespectsTheBaseSet) {
  // Supersets of Z = {0, 1} only: the squared sum still violates Condition 3 there.
  const SquaredSum f({1.0, 1.0, 1.0, 1.0, 1.0});
  std::vector<int> z = {0, 1};
  const auto scan = scan_submodularity(f, z, 100, 9);
  EXPECT_GT(scan.triples, 0);
  EXPECT_EQ(scan.violations, scan.triples);  // every triple: 2 (s+1)^2 < (s+2)^2 + s^2
}

TEST(SetFunctionChecks, NoisyGreedyMeetsTheDerivedBound) {
  std::mt19937_64 g(21);
  long paper_violations = 0;
  for (int t = 0; t < 2000; ++t) {
    const Family fam = monotone_families()[static_cast<size_t>(t) % monotone_families().size()];
    const int n = 5 + t % 8, k = 1 + t % 4;
    const auto f = random_function(fam, n, g);
    const double eps = 0.002 * (1 + t % 50);
    const NoisyGreedy r = noisy_greedy(*f, k, eps, t % 2 == 0, static_cast<std::uint64_t>(t));
    ASSERT_GE(r.value, r.derived_bound - 1e-12 * (1 + r.opt)) << t;
    paper_violations += r.value < r.paper_bound - 1e-12 * (1 + r.opt) ? 1 : 0;
  }
  EXPECT_EQ(paper_violations, 0);  // the published constant is weaker than the derived one here
}

TEST(SetFunctionChecks, AdversarialNoiseCanCostTheDerivedAmount) {
  // Modular f with two equal elements: adversarial noise steers greedy to the worse one.
  const ModularConcave f({1.0, 1.0 - 1e-3, 0.0}, Concave::Identity);
  const NoisyGreedy r = noisy_greedy(f, 1, 0.01, true, 0);
  EXPECT_NEAR(r.opt, 1.0, 1e-12);
  EXPECT_NEAR(r.value, 1.0 - 1e-3, 1e-12);
  EXPECT_GE(r.value, r.derived_bound);
}
