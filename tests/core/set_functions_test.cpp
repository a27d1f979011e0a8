#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "kvo/core/error.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/core/output_fidelity.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

namespace {

std::vector<int> random_subset(int n, std::mt19937_64& g, int exclude = -1) {
  std::vector<int> s;
  for (int j = 0; j < n; ++j)
    if (j != exclude && g() % 2) s.push_back(j);
  return s;
}

}  // namespace

// Memoised gains agree with evaluating from scratch, for every family.
TEST(SetFunctions, MemoisedGainsMatchEvaluation) {
  std::mt19937_64 g(1);
  for (auto fam : monotone_families())
    for (int t = 0; t < 200; ++t) {
      const int n = 3 + static_cast<int>(g() % 8);
      auto f = random_function(fam, n, g);
      auto memo = f->empty_memo();
      std::vector<int> set;
      for (int j = 0; j < n; ++j) {
        if (g() % 2) continue;
        const double before = f->evaluate(set);
        const double gain = f->gain(*memo, j);
        f->add(*memo, j);
        set.push_back(j);
        EXPECT_NEAR(f->evaluate(set) - before, gain, 1e-12);
        EXPECT_NEAR(f->value(*memo), f->evaluate(set), 1e-12);
      }
    }
}

// Families that claim monotone submodular satisfy Def D.1 (3) and monotonicity on random triples.
TEST(SetFunctions, ClaimedSubmodularityHoldsOnRandomTriples) {
  std::mt19937_64 g(2);
  for (auto fam : monotone_families())
    for (int t = 0; t < 500; ++t) {
      const int n = 4 + static_cast<int>(g() % 8);
      auto f = random_function(fam, n, g);
      ASSERT_TRUE(f->traits().monotone && f->traits().submodular) << f->traits().name;
      const int a1 = static_cast<int>(g() % n);
      int a2 = static_cast<int>(g() % n);
      if (a2 == a1) a2 = (a1 + 1) % n;
      std::vector<int> s;
      for (int j = 0; j < n; ++j)
        if (j != a1 && j != a2 && g() % 2) s.push_back(j);
      auto with = [&](std::vector<int> x, std::initializer_list<int> add) {
        x.insert(x.end(), add);
        return f->evaluate(x);
      };
      const double lhs = with(s, {a1}) + with(s, {a2});
      const double rhs = with(s, {a1, a2}) + f->evaluate(s);
      EXPECT_GE(lhs - rhs, -1e-12) << f->traits().name;
      EXPECT_GE(with(s, {a1}) - f->evaluate(s), -1e-12) << f->traits().name;
    }
}

// h(sum w) with a negative weight is neither monotone nor (for concave h) claimed submodular.
TEST(SetFunctions, NegativeWeightsDropTheClaims) {
  const ModularConcave f({1.0, -0.5}, Concave::Sqrt);
  EXPECT_FALSE(f.traits().monotone);
  EXPECT_FALSE(f.traits().submodular);
  const ModularConcave lin({1.0, -0.5}, Concave::Identity);
  EXPECT_TRUE(lin.traits().submodular);
}

TEST(SetFunctions, ConcaveTransformsAreNormalised) {
  for (Concave h : {Concave::Identity, Concave::Sqrt, Concave::Log}) {
    EXPECT_DOUBLE_EQ(apply(h, 0.0), 0.0);
    EXPECT_LT(apply(h, 1.0), apply(h, 2.0));
  }
  EXPECT_THROW(parse_concave("cube"), Error);
}

// Output fidelity (objective E) is not submodular: a concrete instance violates Def D.1 (3).
TEST(SetFunctions, OutputFidelityIsNotSubmodular) {
  // Two keys pulling the output in opposite directions: each alone moves o_T away from o_full,
  // together they cancel, so the second one's gain grows when the first is present.
  Eigen::VectorXd a(3);
  a << 1.0, 1.0, 0.2;
  Eigen::MatrixXd v(3, 2);
  v << 1.0, 0.0, -1.0, 0.0, 0.0, 1.0;
  const OutputFidelity f(a, v);
  EXPECT_FALSE(f.traits().submodular);
  const std::vector<int> empty, s0 = {0}, s1 = {1}, s01 = {0, 1};
  const double lhs = f.evaluate(s0) + f.evaluate(s1);
  const double rhs = f.evaluate(s01) + f.evaluate(empty);
  EXPECT_LT(lhs, rhs - 1e-6);
  // Its full set recovers o_full exactly: phi(V) = |o_full|^2.
  const std::vector<int> all = {0, 1, 2};
  const Eigen::VectorXd o = v.transpose() * a / a.sum();
  EXPECT_NEAR(f.evaluate(all), o.squaredNorm(), 1e-12);
}

TEST(SetFunctions, ValidateSetRejectsDuplicatesAndRange) {
  const std::vector<int> dup = {1, 1}, out = {5};
  EXPECT_THROW(validate_set(dup, 3), Error);
  EXPECT_THROW(validate_set(out, 3), Error);
  std::mt19937_64 g(3);
  EXPECT_NO_THROW(validate_set(random_subset(6, g), 6));
}

// The closed-form leave-one-out of h(sum w) agrees with evaluating each set.
TEST(SetFunctions, LeaveOneOutMatchesEvaluation) {
  std::mt19937_64 g(4);
  for (auto fam : monotone_families())
    for (int t = 0; t < 100; ++t) {
      const int n = 1 + static_cast<int>(g() % 9);
      auto f = random_function(fam, n, g);
      const auto loo = f->leave_one_out();
      ASSERT_EQ(static_cast<int>(loo.size()), n);
      for (int v = 0; v < n; ++v) {
        std::vector<int> s;
        for (int j = 0; j < n; ++j)
          if (j != v) s.push_back(j);
        EXPECT_NEAR(loo[v], f->evaluate(s), 1e-12) << f->traits().name;
      }
    }
}

Eigen::MatrixXd exponential_matrix(int rows, int cols, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::exponential_distribution<double> e(1.0);
  Eigen::MatrixXd s(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) s(r, c) = e(g);
  return s;
}

// Two facility locations are the same function: every gain after a few additions, and every
// greedy optimiser's picks, value and bound, bit for bit.
void expect_same_function(const FacilityLocation& a, const FacilityLocation& b) {
  ASSERT_EQ(a.ground_size(), b.ground_size());
  const int cols = a.ground_size();
  auto ma = a.empty_memo(), mb = b.empty_memo();
  for (int j : {4 % cols, 17 % cols, 9 % cols}) {
    a.add(*ma, j);
    b.add(*mb, j);
  }
  for (int j = 0; j < cols; ++j) EXPECT_EQ(a.gain(*ma, j), b.gain(*mb, j)) << j;
  EXPECT_EQ(a.value(*ma), b.value(*mb));
  GreedyOptions o;
  o.budget = 6;
  for (auto opt : {naive_greedy, lazy_greedy, stochastic_greedy}) {
    const auto x = opt(a, o), y = opt(b, o);
    EXPECT_EQ(x.picks, y.picks);
    EXPECT_EQ(x.value, y.value);
    EXPECT_EQ(x.upper_bound, y.upper_bound);
  }
}

// A view of the caller's column-major buffer is the same function as the owned matrix.
TEST(FacilityLocation, AViewOfTheCallersBufferAgreesWithTheOwnedMatrix) {
  const Eigen::MatrixXd s = exponential_matrix(37, 23, 11);
  const std::vector<double> buffer(s.data(), s.data() + s.size());
  const FacilityLocation owned(s);
  const FacilityLocation view(buffer.data(), 37, 23);
  EXPECT_TRUE(view.borrows_buffer());
  EXPECT_FALSE(owned.borrows_buffer());
  expect_same_function(owned, view);
  EXPECT_THROW(FacilityLocation(nullptr, 3, 3), Error);
}

// A row-major buffer: an asymmetric one (sizes that cut 64 x 64 tiles) is copied by the blocked
// transpose, a symmetric one is read in place; both are the same function as the owned matrix.
TEST(FacilityLocation, ARowMajorBufferIsTransposedOrReadInPlaceWhenSymmetric) {
  for (const auto& [rows, cols] : std::vector<std::pair<int, int>>{{130, 70}, {70, 130}, {100, 100}, {1, 5}}) {
    const Eigen::MatrixXd s = exponential_matrix(rows, cols, 13);
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = s;
    const FacilityLocation copy(FacilityLocation::RowMajor{}, row_major.data(), rows, cols);
    EXPECT_FALSE(copy.borrows_buffer()) << rows << " x " << cols;
    expect_same_function(FacilityLocation(s), copy);
  }
  Eigen::MatrixXd sym = exponential_matrix(150, 150, 17);
  sym = (sym + sym.transpose()).eval();
  ASSERT_TRUE(is_exactly_symmetric(sym.data(), 150));
  const FacilityLocation in_place(FacilityLocation::RowMajor{}, sym.data(), 150, 150);
  EXPECT_TRUE(in_place.borrows_buffer());
  expect_same_function(FacilityLocation(sym), in_place);
  // One differing entry, far from the first tile, is found.
  sym(140, 3) += 1e-12;
  EXPECT_FALSE(is_exactly_symmetric(sym.data(), 150));
  EXPECT_FALSE(FacilityLocation(FacilityLocation::RowMajor{}, sym.data(), 150, 150).borrows_buffer());
  EXPECT_THROW(FacilityLocation(FacilityLocation::RowMajor{}, nullptr, 3, 3), Error);
}

// The copy is refused, naming its size, when it cannot fit.
TEST(FacilityLocation, ARowMajorCopyTooLargeForMemoryIsRefused) {
  const Eigen::MatrixXd s = exponential_matrix(64, 32, 19);
  ::setenv("KVO_MEMORY_LIMIT", "8K", 1);
  std::string e;
  try {
    FacilityLocation f(FacilityLocation::RowMajor{}, s.data(), 32, 64);
  } catch (const Error& x) {
    e = x.what();
  }
  ::unsetenv("KVO_MEMORY_LIMIT");
  EXPECT_NE(e.find("a column-major copy of the 32 x 64 similarity matrix needs about 16.0 KiB"), std::string::npos)
      << e;
}
