// The loss/Hessian checks of D.44-D.49 on random instances meeting the hypotheses, including the
// sign of D.44 Part 5 (known: '-') and of the Newton step (known: x - H^{-1} g).
#include "kvo/proofs_check/softmax_loss.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace kvo;

TEST(SoftmaxLoss, CorrectedGradientMatchesFiniteDifferencesAndThePublishedSignDoesNot) {
  for (int t = 0; t < 10; ++t) {
    const LossInstance in = random_loss_instance(12, 4, 1.0 + 0.2 * t, 1.0, 20.0, static_cast<std::uint64_t>(t));
    const auto recs = check_loss_formulas(in, "test");
    ASSERT_EQ(recs.size(), 2u);
    EXPECT_EQ(recs[0].id, "C23");
    EXPECT_TRUE(recs[0].holds) << recs[0].detail.dump();
    EXPECT_LE(recs[0].metric, 1e-6);
    EXPECT_EQ(recs[1].id, "D9");
    EXPECT_FALSE(recs[1].holds);  // '+' is wrong whenever <f, f - b> != 0
    EXPECT_GT(recs[1].metric, 1e-3);
  }
}

TEST(SoftmaxLoss, KnownGradientSignOnATinyInstance) {
  // n = 2, d = 1, A = [1; -1], b = (1, 0): increasing x moves f towards b, so dL_exp/dx < 0.
  SoftmaxLoss L;
  L.A = Eigen::MatrixXd(2, 1);
  L.A << 1.0, -1.0;
  L.b = Eigen::Vector2d(1.0, 0.0);
  L.w = Eigen::Vector2d(1.0, 1.0);
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(1, 0.3);
  EXPECT_LT(L.grad_exp(x)(0), 0.0);
  const double fd = fd_gradient([&](const Eigen::VectorXd& y) { return L.loss_exp(y); }, x)(0);
  EXPECT_NEAR(L.grad_exp(x)(0), fd, 1e-8);
  EXPECT_GT(std::fabs(L.grad_exp(x, true)(0) - fd), 1e-3);
}

TEST(SoftmaxLoss, HessianIsPositiveDefiniteUnderTheLemmaHypotheses) {
  for (int t = 0; t < 6; ++t) {
    const LossInstance in = random_loss_instance(16, 5, 1.0 + 0.5 * (t % 3), 1.0, 0.0, static_cast<std::uint64_t>(t));
    for (const auto& r : check_hessian_pd(in.loss.A, in.R, 1.0, static_cast<std::uint64_t>(t), "test")) {
      EXPECT_TRUE(r.holds) << r.variant << " " << r.detail.dump();
      const auto& slack = r.detail["log10_constant_over_needed"];  // a number (> 0: slack) or "not needed"
      if (slack.is_number()) {
        EXPECT_GT(slack.get<double>(), 0.0);
      }
    }
  }
}

TEST(SoftmaxLoss, LipschitzRatiosStayBelowTheBounds) {
  const LossInstance in = random_loss_instance(16, 4, 1.5, 1.0, 20.0, 3);
  const auto r = check_lipschitz(in, 12, 4, "test");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].holds);
  EXPECT_LT(r[0].metric, 0.0);
}

TEST(SoftmaxLoss, NewtonConvergesAndThePublishedSignDiverges) {
  const LossInstance in = random_loss_instance(20, 4, 1.0, 1.0, 200.0 * std::exp(1.0), 8);
  const auto r = check_newton(in, 3, 9, "test");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].holds) << r[0].detail.dump();
  EXPECT_FALSE(r[1].holds);
  EXPECT_GT(r[1].metric, 10.0);  // x + H^{-1} g doubles the error each step
}
