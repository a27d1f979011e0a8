// The offline (nested-eviction) oracle: the default (assignment) solver equals enumeration of
// every schedule and the cache-state DP on thousands of random instances, its dual certificate
// closes the gap, the flow solver (SSP) and BGL's min-cost flow agree, and every nested policy's
// schedule stays below it.
#include "kvo/oracle/offline_oracle.hpp"

#include <gtest/gtest.h>

#include <random>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/synth.hpp"
#include "offline_problems.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

using test::random_offline_problem;

double feasible_value(const OfflineProblem& p, const OfflineSolution& s) {
  const auto sched = s.schedule();
  std::vector<int> prev;
  for (int i = 0; i < p.n(); ++i) {
    const auto& cur = sched[static_cast<size_t>(i)];
    EXPECT_LE(static_cast<int>(cur.size()), p.budget) << "step " << i;
    for (int j : cur) EXPECT_TRUE(j == i || std::binary_search(prev.begin(), prev.end(), j)) << "re-entry of " << j;
    for (int j = std::max(0, i - p.recent + 1); j <= i; ++j)
      EXPECT_TRUE(std::binary_search(cur.begin(), cur.end(), j)) << "window token " << j << " missing at " << i;
    prev = cur;
  }
  return schedule_value(p, sched);
}

}  // namespace

TEST(DynamicOracle, FlowEqualsEnumerationAndDPWithACertificate) {
  std::mt19937_64 g(71);
  int instances = 0;
  for (int t = 0; t < 3000; ++t, ++instances) {
    const int n = 1 + static_cast<int>(g() % 10);
    const OfflineProblem p = random_offline_problem(g, n, t % 3 == 0);
    const OfflineSolution flow = solve_offline(p);
    const OfflineSolution brute = solve_offline_brute(p);
    const double tol = 1e-9 * std::max(1.0, brute.value);
    ASSERT_NEAR(flow.value, brute.value, tol) << "n=" << n << " k=" << p.budget << " r=" << p.recent;
    ASSERT_NEAR(feasible_value(p, flow), flow.value, tol);
    ASSERT_NEAR(flow.upper, flow.value, tol) << "dual certificate does not close the gap";
    if (t % 4 == 0) {
      const OfflineSolution dp = solve_offline_dp(
          n, p.budget, p.recent,
          [&](int i, const std::vector<int>& s) {
            double v = 0;
            for (int j : s) v += p.w(i, j);
            return v;
          },
          true);
      ASSERT_NEAR(dp.value, brute.value, tol);
    }
  }
  EXPECT_EQ(instances, 3000);
}

TEST(DynamicOracle, TwelveTokensAgainstEnumeration) {
  std::mt19937_64 g(72);
  for (int t = 0; t < 6; ++t) {
    OfflineProblem p = random_offline_problem(g, 12, false);
    p.budget = 2 + static_cast<int>(g() % 2);
    p.recent = static_cast<int>(g() % 2);
    EXPECT_NEAR(solve_offline(p).value, solve_offline_brute(p).value, 1e-9);
  }
}

TEST(DynamicOracle, BoostGraphMinCostFlowAgrees) {
  std::mt19937_64 g(73);
  for (int t = 0; t < 300; ++t) {
    const OfflineProblem p = random_offline_problem(g, 1 + static_cast<int>(g() % 25), false);
    const auto a = solve_offline(p), b = solve_offline_bgl(p);
    ASSERT_NEAR(a.value, b.value, 1e-9 * std::max(1.0, a.value));
    ASSERT_NEAR(feasible_value(p, b), b.value, 1e-9 * std::max(1.0, a.value));
  }
}

// The assignment solver against the flow solver it replaced as the default, on larger random
// instances (ties included) and on dense attention of synthetic heads with a forced window.
TEST(DynamicOracle, AssignmentEqualsTheFlowSolver) {
  std::mt19937_64 g(75);
  for (int t = 0; t < 400; ++t) {
    const OfflineProblem p = random_offline_problem(g, 1 + static_cast<int>(g() % 60), t % 4 == 0);
    const auto a = solve_offline(p), b = solve_offline_ssp(p);
    const double tol = 1e-9 * std::max(1.0, b.value);
    ASSERT_EQ(a.method, "assignment");
    ASSERT_NEAR(a.value, b.value, tol) << "n=" << p.n() << " k=" << p.budget << " r=" << p.recent;
    ASSERT_NEAR(a.upper, a.value, tol);
    ASSERT_NEAR(feasible_value(p, a), a.value, tol);
  }
  for (const int r : {0, 4, 16}) {
    OfflineProblem p;
    p.w = dense_attention(HeadView(test::synthetic_layer(1, 1, 256, 16, 0, 9 + r), 0, 0));
    p.budget = 51;
    p.recent = r;
    const auto a = solve_offline(p), b = solve_offline_ssp(p);
    EXPECT_NEAR(a.value, b.value, 1e-9 * b.value) << "r=" << r;
    EXPECT_NEAR(a.upper, a.value, 1e-9 * b.value) << "r=" << r;
  }
}

// The certificate is independent of the solver: wrong prices or a worse schedule leave a gap,
// and an infeasible schedule is refused.
TEST(DynamicOracle, CertificateDetectsSuboptimalityAndInfeasibility) {
  std::mt19937_64 g(74);
  OfflineProblem p = random_offline_problem(g, 9, false);
  p.budget = 3;
  p.recent = 0;
  const auto s = solve_offline(p);
  std::vector<int> worse = s.end;
  for (int j = 0; j < 9; ++j) worse[j] = std::min(worse[j], j);  // keep each token one step at most
  const std::vector<double> zero(9, 0.0);
  EXPECT_GT(dual_bound(p, s.end, zero), s.value + 1e-9);  // prices 0: the bound is sum of all weights
  double worse_value = schedule_value(p, OfflineSolution{0, 0, worse, {}, "", 0}.schedule());
  EXPECT_LT(worse_value, s.upper);
  std::vector<int> bad(9, 8);  // everybody kept to the end: over budget
  EXPECT_THROW(dual_bound(p, bad, s.price), Error);
}

// OPT_dyn is between every nested policy's value and the sum of per-step static optima (D.27),
// on a synthetic heavy-hitter trace with w = dense attention.
TEST(DynamicOracle, OrderingPolicyBelowOptBelowStaticSum) {
  SynthOptions so;
  so.tokens = 96;
  so.layers = 1;
  so.heads = 2;
  so.kv_heads = 1;
  const Trace tr = synthesize(so);
  for (int head = 0; head < 2; ++head) {
    OfflineProblem p;
    p.w = dense_attention(HeadView(tr, 0, head));
    p.budget = 16;
    const auto opt = solve_offline(p);
    double static_sum = 0;
    for (int i = 0; i < p.n(); ++i) {
      Eigen::VectorXd row = p.w.row(i).head(i + 1).transpose();
      std::sort(row.data(), row.data() + row.size(), std::greater<>());
      static_sum += row.head(std::min<Eigen::Index>(16, row.size())).sum();
    }
    EXPECT_LE(opt.value, static_sum + 1e-9);
    for (const char* policy : {"h2o", "h2o-paper", "tova", "window", "streaming", "scissorhands"}) {
      ReplayOptions o;
      o.run.policy = PolicySpec::named(policy);
      o.run.budget = Budget(Amount::parse("16"));
      o.run.layers = {0};
      const auto r = replay(tr, o);
      EXPECT_LE(schedule_value(p, r.heads[static_cast<size_t>(head)].kept_sets()), opt.value + 1e-9) << policy;
    }
  }
}

TEST(DynamicOracle, GeneralObjectiveDPMatchesEnumerationOfCaches) {
  // A non-additive (facility-location-like) per-step objective: the DP with every subset equals
  // the DP restricted to maximal caches for this monotone objective.
  std::mt19937_64 g(75);
  for (int t = 0; t < 100; ++t) {
    const int n = 3 + static_cast<int>(g() % 6), k = 1 + static_cast<int>(g() % 3);
    Eigen::MatrixXd s = Eigen::MatrixXd::Random(n, n).cwiseAbs();
    auto f = [&](int i, const std::vector<int>& c) {
      double v = 0;
      for (int r = std::max(0, i - 2); r <= i; ++r) {
        double m = 0;
        for (int j : c) m = std::max(m, s(r, j));
        v += m;
      }
      return v;
    };
    const auto all = solve_offline_dp(n, std::min(k, n), 0, f, false);
    const auto maximal = solve_offline_dp(n, std::min(k, n), 0, f, true);
    EXPECT_NEAR(all.value, maximal.value, 1e-12);
    EXPECT_GE(all.work, maximal.work);
  }
}

TEST(DynamicOracle, BadProblemsAreErrors) {
  OfflineProblem p;
  p.w = Eigen::MatrixXd::Ones(4, 4);
  p.budget = 5;
  EXPECT_THROW(solve_offline(p), Error);
  p.budget = 2;
  p.recent = 3;
  EXPECT_THROW(solve_offline(p), Error);
  p.recent = 0;
  p.w(2, 1) = -1;
  EXPECT_THROW(solve_offline(p), Error);
}

// General per-step objectives: the cache-state DP equals enumeration of every schedule, and the
// large-n upper bounds are above the optimum (and exact for a modular objective).
TEST(DynamicOracle, GeneralObjectiveDPEqualsEnumerationAndBoundsHold) {
  std::mt19937_64 g(76);
  for (int t = 0; t < 150; ++t) {
    const int n = 2 + static_cast<int>(g() % 7), k = 1 + static_cast<int>(g() % 3), r = static_cast<int>(g() % 2);
    const int budget = std::min(k + r, n), recent = std::min(r, budget);
    Eigen::MatrixXd s = Eigen::MatrixXd::Random(n, n).cwiseAbs();
    auto facility = [&](int i) {  // clients: the last 3 queries; candidates: keys 0..i
      const int first = std::max(0, i - 2);
      return std::make_unique<FacilityLocation>(s.block(first, 0, i - first + 1, i + 1));
    };
    auto g_fl = [&](int i, const std::vector<int>& c) { return facility(i)->evaluate(c); };
    const auto dp = solve_offline_dp(n, budget, recent, g_fl, true);
    const auto en = solve_offline_enumerate(n, budget, recent, g_fl);
    ASSERT_NEAR(dp.value, en.value, 1e-12) << "n=" << n << " k=" << budget << " r=" << recent;
    const auto ub = offline_upper_bound(n, budget, recent, facility);
    EXPECT_GE(ub.static_sum, dp.value - 1e-12);
    EXPECT_GE(ub.modular_flow, dp.value - 1e-12);
    // Modular objective: the relaxation is exact.
    OfflineProblem p;
    p.w = s.triangularView<Eigen::Lower>();
    p.budget = budget;
    p.recent = recent;
    auto modular = [&](int i) {
      std::vector<double> w(static_cast<size_t>(i) + 1);
      for (int j = 0; j <= i; ++j) w[static_cast<size_t>(j)] = p.w(i, j);
      return std::make_unique<ModularConcave>(w, Concave::Identity);
    };
    EXPECT_NEAR(offline_upper_bound(n, budget, recent, modular).modular_flow, solve_offline(p).value, 1e-9);
  }
}
