// The softmax-regression loss of H2O appendix D.35-D.49 (after Deng, Li, Song, arXiv 2304.10411)
// in fp64: u = exp(Ax), alpha = <u, 1>, f = u / alpha, c = f - b,
// L = 1/2 |c|^2 + <u, 1> + 1/2 |W A x|^2 with W = diag(w), its gradient (the corrected sign of
// D.44 Part 5 and the published one), its Hessian A^T (B + W^2) A, and the checks C23-C26 / D9:
// finite differences, positive definiteness, Lipschitz constants in log space and Newton's method.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kvo/proofs_check/report.hpp"

namespace kvo {

struct SoftmaxLoss {
  Eigen::MatrixXd A;  // n x d
  Eigen::VectorXd b;  // n, b >= 0, |b|_1 <= 1
  Eigen::VectorXd w;  // n

  Eigen::VectorXd u(const Eigen::VectorXd& x) const;
  Eigen::VectorXd softmax(const Eigen::VectorXd& x) const;  // f(x)
  double loss(const Eigen::VectorXd& x) const;
  double loss_exp(const Eigen::VectorXd& x) const;
  // grad of L_exp: A^T (f∘c - f <f, c>) (corrected), or A^T (f∘c + f <f, c>) as printed in D.44.
  Eigen::VectorXd grad_exp(const Eigen::VectorXd& x, bool published_sign = false) const;
  Eigen::VectorXd grad(const Eigen::VectorXd& x) const;
  // B(x) = J^T J + sum_m c_m Hess_s f_m + diag(u), J = diag(f) - f f^T (n x n).
  Eigen::MatrixXd B(const Eigen::VectorXd& x) const;
  Eigen::MatrixXd hessian(const Eigen::VectorXd& x) const;  // A^T (B + W^2) A
};

// Central differences of a scalar or vector function, step h_i = 1e-5 (1 + |x_i|).
Eigen::VectorXd fd_gradient(const std::function<double(const Eigen::VectorXd&)>& fn, const Eigen::VectorXd& x);
Eigen::MatrixXd fd_jacobian(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& fn, const Eigen::VectorXd& x);

// A random instance meeting the hypotheses of D.47/D.49: |A| = R (spectral), |x| <= R, b >= 0 with
// |b|_1 = 1, sigma_min(A) > 0, and w_i^2 = floor + l / sigma_min(A)^2.
struct LossInstance {
  SoftmaxLoss loss;
  Eigen::VectorXd x;
  double R = 1.0, l = 1.0, sigma_min = 0.0;
};
LossInstance make_loss_instance(Eigen::MatrixXd A, double R, double l, double w_floor, std::uint64_t seed);
LossInstance random_loss_instance(int n, int d, double R, double l, double w_floor, std::uint64_t seed);

// The closed forms the checks compare (C23) or iterate with (C26): the loss's own unless a caller
// hands in others (a test's perturbed gradient, to see the check fail).
struct LossDerivatives {
  std::function<Eigen::VectorXd(const Eigen::VectorXd&)> grad_exp, grad;
  std::function<Eigen::MatrixXd(const Eigen::VectorXd&)> hessian;
  static LossDerivatives of(const SoftmaxLoss& loss);  // refers to `loss`: keep it alive
};

// The checks on one instance; `variant` names the data (random keys, "keys L0H0", ...). Each empty
// member of `closed_form` is the instance's own derivative.
std::vector<CheckRecord> check_loss_formulas(const LossInstance& in, const std::string& variant,
                                             const LossDerivatives& closed_form = {});  // C23, D9a
// Part 1 builds its instance with w_i^2 = part1_floor + l / sigma_min^2 (D.47 needs part1_floor >= 20).
std::vector<CheckRecord> check_hessian_pd(const Eigen::MatrixXd& A, double R, double l, std::uint64_t seed,
                                          const std::string& variant, double part1_floor = 20.0);  // C24
std::vector<CheckRecord> check_lipschitz(const LossInstance& in, int pairs, std::uint64_t seed,
                                         const std::string& variant);  // C25
std::vector<CheckRecord> check_newton(const LossInstance& in, int trials, std::uint64_t seed,
                                      const std::string& variant, const LossDerivatives& closed_form = {});  // C26, D9b

}  // namespace kvo
