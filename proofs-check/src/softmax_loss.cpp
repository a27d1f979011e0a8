#include "kvo/proofs_check/softmax_loss.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "kvo/core/error.hpp"

namespace kvo {

using Eigen::MatrixXd;
using Eigen::VectorXd;

VectorXd SoftmaxLoss::u(const VectorXd& x) const { return (A * x).array().exp().matrix(); }

VectorXd SoftmaxLoss::softmax(const VectorXd& x) const {
  const VectorXd s = A * x;
  const VectorXd e = (s.array() - s.maxCoeff()).exp().matrix();
  return e / e.sum();
}

double SoftmaxLoss::loss_exp(const VectorXd& x) const { return 0.5 * (softmax(x) - b).squaredNorm(); }

double SoftmaxLoss::loss(const VectorXd& x) const {
  return loss_exp(x) + u(x).sum() + 0.5 * (w.asDiagonal() * (A * x)).squaredNorm();
}

VectorXd SoftmaxLoss::grad_exp(const VectorXd& x, bool published_sign) const {
  const VectorXd f = softmax(x), c = f - b;
  const double fc = f.dot(c);
  const VectorXd inner = f.cwiseProduct(c) + (published_sign ? 1.0 : -1.0) * fc * f;
  return A.transpose() * inner;
}

VectorXd SoftmaxLoss::grad(const VectorXd& x) const {
  const VectorXd w2 = w.cwiseProduct(w);
  return grad_exp(x) + A.transpose() * u(x) + A.transpose() * (w2.cwiseProduct(A * x));
}

MatrixXd SoftmaxLoss::B(const VectorXd& x) const {
  const VectorXd f = softmax(x), c = f - b, cf = c.cwiseProduct(f);
  const MatrixXd J = MatrixXd(f.asDiagonal()) - f * f.transpose();
  MatrixXd second = MatrixXd(cf.asDiagonal()) - cf * f.transpose() - f * cf.transpose() +
                    c.dot(f) * (f * f.transpose()) - c.dot(f) * J;
  MatrixXd out = J.transpose() * J + second;
  out.diagonal() += u(x);
  return out;
}

MatrixXd SoftmaxLoss::hessian(const VectorXd& x) const {
  MatrixXd inner = B(x);
  inner.diagonal() += w.cwiseProduct(w);
  return A.transpose() * inner * A;
}

namespace {
double step_of(double xi) { return 1e-5 * (1.0 + std::fabs(xi)); }
double rel_err(const MatrixXd& got, const MatrixXd& want) {
  return (got - want).norm() / std::max(want.norm(), 1e-300);
}
double lambda_min(const MatrixXd& m) {
  Eigen::SelfAdjointEigenSolver<MatrixXd> es(0.5 * (m + m.transpose()), Eigen::EigenvaluesOnly);
  return es.eigenvalues()(0);
}
double lambda_max(const MatrixXd& m) {
  Eigen::SelfAdjointEigenSolver<MatrixXd> es(0.5 * (m + m.transpose()), Eigen::EigenvaluesOnly);
  return es.eigenvalues()(es.eigenvalues().size() - 1);
}
double spectral_norm(const MatrixXd& m) {
  Eigen::JacobiSVD<MatrixXd> svd(m);
  return svd.singularValues()(0);
}
VectorXd random_direction(int d, std::mt19937_64& rng) {
  std::normal_distribution<double> g;
  VectorXd v(d);
  for (int t = 0; t < d; ++t) v(t) = g(rng);
  return v / v.norm();
}
}  // namespace

VectorXd fd_gradient(const std::function<double(const VectorXd&)>& fn, const VectorXd& x) {
  VectorXd g(x.size());
  for (int t = 0; t < x.size(); ++t) {
    const double h = step_of(x(t));
    VectorXd p = x, m = x;
    p(t) += h;
    m(t) -= h;
    g(t) = (fn(p) - fn(m)) / (2 * h);
  }
  return g;
}

MatrixXd fd_jacobian(const std::function<VectorXd(const VectorXd&)>& fn, const VectorXd& x) {
  MatrixXd j;
  for (int t = 0; t < x.size(); ++t) {
    const double h = step_of(x(t));
    VectorXd p = x, m = x;
    p(t) += h;
    m(t) -= h;
    const VectorXd col = (fn(p) - fn(m)) / (2 * h);
    if (t == 0) j.resize(col.size(), x.size());
    j.col(t) = col;
  }
  return j;
}

LossInstance make_loss_instance(MatrixXd A, double R, double l, double w_floor, std::uint64_t seed) {
  require(A.rows() >= A.cols() && A.cols() > 0, "loss instance: A needs n >= d > 0");
  Eigen::JacobiSVD<MatrixXd> svd(A);
  const double top = svd.singularValues()(0);
  require(top > 0, "loss instance: A is zero");
  A *= R / top;  // spectral norm exactly R
  LossInstance in;
  in.R = R;
  in.l = l;
  in.sigma_min = svd.singularValues()(svd.singularValues().size() - 1) * R / top;
  require(in.sigma_min > 0, "loss instance: A has no full column rank (sigma_min = 0)");
  const int n = static_cast<int>(A.rows()), d = static_cast<int>(A.cols());
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  VectorXd b(n);
  for (int t = 0; t < n; ++t) b(t) = uni(rng);
  b /= b.sum();
  in.loss.A = std::move(A);
  in.loss.b = b;
  const double w2 = w_floor + l / (in.sigma_min * in.sigma_min);
  require(w2 >= 0, "loss instance: w^2 = floor + l / sigma_min^2 is negative");
  in.loss.w = VectorXd::Constant(n, std::sqrt(w2));
  in.x = random_direction(d, rng) * (R * uni(rng));
  return in;
}

LossInstance random_loss_instance(int n, int d, double R, double l, double w_floor, std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::normal_distribution<double> g;
  MatrixXd A(n, d);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < d; ++c) A(r, c) = g(rng);
  return make_loss_instance(std::move(A), R, l, w_floor, seed);
}

LossDerivatives LossDerivatives::of(const SoftmaxLoss& loss) {
  LossDerivatives d;
  d.grad_exp = [&loss](const VectorXd& x) { return loss.grad_exp(x); };
  d.grad = [&loss](const VectorXd& x) { return loss.grad(x); };
  d.hessian = [&loss](const VectorXd& x) { return loss.hessian(x); };
  return d;
}

namespace {
// The given closed forms, each empty one replaced by the loss's own.
LossDerivatives or_own(LossDerivatives given, const SoftmaxLoss& loss) {
  const LossDerivatives own = LossDerivatives::of(loss);
  if (!given.grad_exp) given.grad_exp = own.grad_exp;
  if (!given.grad) given.grad = own.grad;
  if (!given.hessian) given.hessian = own.hessian;
  return given;
}
}  // namespace

std::vector<CheckRecord> check_loss_formulas(const LossInstance& in, const std::string& variant,
                                             const LossDerivatives& closed_form) {
  const SoftmaxLoss& L = in.loss;
  const LossDerivatives D = or_own(closed_form, L);
  const VectorXd& x = in.x;
  const MatrixXd& A = L.A;
  const VectorXd u = L.u(x), f = L.softmax(x);
  nlohmann::json errs;
  // D.44: du/dx = diag(u) A; dalpha/dx = u^T A; df/dx = (diag(f) - f f^T) A; grad L_exp.
  errs["du"] = rel_err(MatrixXd(u.asDiagonal()) * A, fd_jacobian([&](const VectorXd& y) { return L.u(y); }, x));
  errs["dalpha"] = rel_err(A.transpose() * u, fd_gradient([&](const VectorXd& y) { return L.u(y).sum(); }, x));
  errs["dalpha_inv"] =
      rel_err(-A.transpose() * f / u.sum(), fd_gradient([&](const VectorXd& y) { return 1.0 / L.u(y).sum(); }, x));
  const MatrixXd J = MatrixXd(f.asDiagonal()) - f * f.transpose();
  errs["df"] = rel_err(J * A, fd_jacobian([&](const VectorXd& y) { return L.softmax(y); }, x));
  const VectorXd fd_exp = fd_gradient([&](const VectorXd& y) { return L.loss_exp(y); }, x);
  errs["grad_exp"] = rel_err(D.grad_exp(x), fd_exp);
  // D.45/D.46: Hessian of alpha = A^T diag(u) A; and the full Hessian A^T (B + W^2) A.
  errs["hess_alpha"] = rel_err(A.transpose() * u.asDiagonal() * A,
                               fd_jacobian([&](const VectorXd& y) { return VectorXd(L.A.transpose() * L.u(y)); }, x));
  errs["hessian"] = rel_err(D.hessian(x), fd_jacobian([&](const VectorXd& y) { return L.grad(y); }, x));
  errs["grad"] = rel_err(D.grad(x), fd_gradient([&](const VectorXd& y) { return L.loss(y); }, x));
  double worst = 0.0;
  for (auto& [k, v] : errs.items()) worst = std::max(worst, v.get<double>());
  std::vector<CheckRecord> out;
  auto c23 = make_record("C23", variant, ClaimKind::Theorem, worst <= 1e-6, worst);
  c23.detail = {{"relative_errors", errs}, {"tolerance", 1e-6}, {"n", A.rows()}, {"d", A.cols()}, {"R", in.R}};
  out.push_back(c23);
  const double published = rel_err(L.grad_exp(x, true), fd_exp);
  // The published '+' is wrong unless <f, c> = 0; the corrected '-' must match.
  auto d9 = make_record("D9", variant + " gradient sign", ClaimKind::Defect, published <= 1e-6, published);
  d9.detail = {
      {"published_plus_error", published}, {"corrected_minus_error", errs["grad_exp"]}, {"f_dot_c", f.dot(f - L.b)}};
  out.push_back(d9);
  return out;
}

std::vector<CheckRecord> check_hessian_pd(const MatrixXd& A0, double R, double l, std::uint64_t seed,
                                          const std::string& variant, double part1_floor) {
  std::vector<CheckRecord> out;
  // Part 1: w_i^2 = 20 + l / sigma_min^2  =>  Hessian >= l I.
  LossInstance p1 = make_loss_instance(A0, R, l, part1_floor, seed);
  const MatrixXd B1 = p1.loss.B(p1.x);
  const double lam_b = lambda_min(B1), lam_h = lambda_min(p1.loss.hessian(p1.x));
  auto r1 = make_record("C24", variant + " part 1", ClaimKind::Theorem, lam_h >= l * (1 - 1e-9), lam_h / l);
  const double needed1 = std::max(0.0, -lam_b);  // the part of "20" the proof actually uses
  r1.detail = {{"lambda_min_hessian", lam_h},
               {"lambda_min_B", lam_b},
               {"l", l},
               {"sigma_min", p1.sigma_min},
               {"R", R},
               {"constant", part1_floor},
               {"needed", needed1},
               {"log10_constant_over_needed", needed1 > 0 ? nlohmann::json(std::log10(part1_floor / needed1))
                                                          : nlohmann::json("not needed: lambda_min(B) >= 0")}};
  out.push_back(r1);
  // Part 2: w_i^2 = 200 e^{R^2} + l / sigma_min^2  =>  0.9 (B + W^2) <= W^2 <= 1.1 (B + W^2).
  const double floor2 = 200.0 * std::exp(R * R);
  LossInstance p2 = make_loss_instance(A0, R, l, floor2, seed);
  const MatrixXd B2 = p2.loss.B(p2.x);
  const VectorXd w2 = p2.loss.w.cwiseProduct(p2.loss.w);
  const MatrixXd lower = MatrixXd(w2.asDiagonal()) * 0.1 - 0.9 * B2;  // W^2 - 0.9 (B + W^2)
  const MatrixXd upper = 1.1 * B2 + MatrixXd(w2.asDiagonal()) * 0.1;  // 1.1 (B + W^2) - W^2
  const double lo = lambda_min(lower), hi = lambda_min(upper);
  const double tol = 1e-9 * w2.maxCoeff();
  // Smallest uniform floor that would make the sandwich hold: w^2 >= 9 lambda_max(B), >= -11 lambda_min(B).
  const double needed2 = std::max({0.0, 9.0 * lambda_max(B2), -11.0 * lambda_min(B2)});
  auto r2 = make_record("C24", variant + " part 2", ClaimKind::Theorem, lo >= -tol && hi >= -tol,
                        std::min(lo, hi) / w2.minCoeff());
  r2.detail = {{"lambda_min_lower_side", lo},
               {"lambda_min_upper_side", hi},
               {"constant", floor2},
               {"needed", needed2},
               {"log10_constant_over_needed",
                needed2 > 0 ? nlohmann::json(std::log10(floor2 / needed2)) : nlohmann::json("not needed: B = 0")},
               {"R", R},
               {"outside_theorem_regime", R <= 10}};
  out.push_back(r2);
  return out;
}

std::vector<CheckRecord> check_lipschitz(const LossInstance& in, int pairs, std::uint64_t seed,
                                         const std::string& variant) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const int n = static_cast<int>(in.loss.A.rows()), d = static_cast<int>(in.loss.A.cols());
  const double R = in.R;
  const double log_h_bound = 2.0 * std::log(n) + 40.0 * R * R;          // ln(n^2 e^{40 R^2})
  const double log_u_bound = std::log(2.0 * std::sqrt(n) * R) + R * R;  // ln(2 sqrt(n) R e^{R^2})
  double worst_h = -INFINITY, worst_u = -INFINITY;
  for (int t = 0; t < pairs; ++t) {
    const VectorXd x = random_direction(d, rng) * (R * uni(rng));
    const VectorXd y =
        t % 2 ? VectorXd(x + random_direction(d, rng) * 1e-3 * R) : VectorXd(random_direction(d, rng) * (R * uni(rng)));
    if ((y.norm() > R) || (x - y).norm() == 0) continue;
    const double dx = (x - y).norm();
    worst_h = std::max(worst_h, std::log(spectral_norm(in.loss.hessian(x) - in.loss.hessian(y)) / dx));
    worst_u = std::max(worst_u, std::log((in.loss.u(x) - in.loss.u(y)).norm() / dx));
  }
  const double ln10 = std::log(10.0);
  const double margin = std::max(worst_h - log_h_bound, worst_u - log_u_bound) / ln10;
  auto r = make_record("C25", variant, ClaimKind::Theorem, margin <= 1e-9, margin);
  r.detail = {{"log10_hessian_ratio", worst_h / ln10},
              {"log10_hessian_bound", log_h_bound / ln10},
              {"log10_u_ratio", worst_u / ln10},
              {"log10_u_bound", log_u_bound / ln10},
              {"pairs", pairs},
              {"R", R},
              {"n", n}};
  return {r};
}

namespace {

// argmin L by damped Newton to |grad| <= 1e-13 (L is strongly convex under the hypotheses).
VectorXd minimise(const SoftmaxLoss& L, VectorXd x) {
  for (int it = 0; it < 200; ++it) {
    const VectorXd g = L.grad(x);
    if (g.norm() <= 1e-13 * (1.0 + L.w.maxCoeff() * L.w.maxCoeff())) break;
    const VectorXd step = L.hessian(x).ldlt().solve(g);
    double t = 1.0;
    const double f0 = L.loss(x);
    while (t > 1e-12 && L.loss(x - t * step) > f0 - 1e-4 * t * g.dot(step)) t *= 0.5;
    x -= t * step;
  }
  return x;
}

// Aᵀ D̃ A with D = diag(B) + W^2 subsampled by leverage scores of D^{1/2} A (m rows, reweighted).
MatrixXd subsampled_hessian(const SoftmaxLoss& L, const VectorXd& x, int m, std::mt19937_64& rng) {
  VectorXd D = L.B(x).diagonal() + L.w.cwiseProduct(L.w);
  D = D.cwiseMax(0.0);
  const MatrixXd S = D.cwiseSqrt().asDiagonal() * L.A;
  const MatrixXd G = (S.transpose() * S).inverse();
  std::vector<double> lev(static_cast<size_t>(S.rows()));
  for (int r = 0; r < S.rows(); ++r)
    lev[static_cast<size_t>(r)] = std::max(1e-300, S.row(r).dot(G * S.row(r).transpose()));
  std::discrete_distribution<int> pick(lev.begin(), lev.end());
  double total = 0.0;
  for (double v : lev) total += v;
  MatrixXd H = MatrixXd::Zero(L.A.cols(), L.A.cols());
  for (int t = 0; t < m; ++t) {
    const int r = pick(rng);
    const double p = lev[static_cast<size_t>(r)] / total;
    H += S.row(r).transpose() * S.row(r) / (m * p);
  }
  return H;
}

}  // namespace

std::vector<CheckRecord> check_newton(const LossInstance& in, int trials, std::uint64_t seed,
                                      const std::string& variant, const LossDerivatives& closed_form) {
  const SoftmaxLoss& L = in.loss;
  const LossDerivatives D = or_own(closed_form, L);
  const int n = static_cast<int>(L.A.rows()), d = static_cast<int>(L.A.cols());
  const VectorXd xs = minimise(L, VectorXd::Zero(d));
  const double M = n * std::exp(in.R * in.R);  // M = exp(Theta(R^2 + log n)) with unit constants
  const double r0 = std::min(0.1 * in.l / M, 0.1);
  const double eps = r0 * 1e-6, delta = 0.05;
  const int allowed = static_cast<int>(std::ceil(std::log(r0 / eps)));
  const int m = static_cast<int>(std::ceil(10.0 * d * std::log(d / delta)));
  std::mt19937_64 rng(seed);
  int worst_exact = 0, worst_sub = 0, sub_ok = 0;
  bool monotone = true;
  double published_growth = 0.0;
  for (int t = 0; t < trials; ++t) {
    const VectorXd x0 = xs + random_direction(d, rng) * r0;
    for (int mode = 0; mode < 2; ++mode) {
      VectorXd x = x0;
      int it = 0;
      double gprev = D.grad(x).norm();
      while ((x - xs).norm() > eps && it < 60) {
        const VectorXd g = D.grad(x);
        const MatrixXd H = mode == 0 ? D.hessian(x) : subsampled_hessian(L, x, m, rng);
        x -= H.ldlt().solve(g);
        ++it;
        const double gn = D.grad(x).norm();
        if (mode == 0 && gn > gprev * (1 + 1e-9) && gn > 1e-12 * (1.0 + L.w.maxCoeff())) monotone = false;
        gprev = gn;
      }
      if (mode == 0) worst_exact = std::max(worst_exact, it);
      if (mode == 1) {
        worst_sub = std::max(worst_sub, it);
        sub_ok += it <= allowed ? 1 : 0;
      }
    }
    // Alg. 4 line 9 as printed: x + H^{-1} g, five steps.
    VectorXd x = x0;
    for (int s = 0; s < 5; ++s) x += L.hessian(x).ldlt().solve(L.grad(x));
    published_growth = std::max(published_growth, (x - xs).norm() / (x0 - xs).norm());
  }
  const double rate = static_cast<double>(sub_ok) / trials;
  auto r = make_record("C26", variant, ClaimKind::Finding, worst_exact <= allowed && monotone && rate >= 1 - delta,
                       static_cast<double>(std::max(worst_exact, worst_sub)) / allowed);
  r.detail = {{"allowed_iterations", allowed},
              {"exact_newton_max_iterations", worst_exact},
              {"subsampled_max_iterations", worst_sub},
              {"subsampled_success_rate", rate},
              {"delta", delta},
              {"samples_m", m},
              {"gradient_norm_monotone", monotone},
              {"start_distance", r0},
              {"epsilon", eps},
              {"x_star_norm", xs.norm()},
              {"R", in.R},
              {"outside_theorem_regime", in.R <= 10}};
  auto s = make_record("D9", variant + " Newton sign", ClaimKind::Defect, published_growth < 1.0, published_growth);
  s.detail = {{"distance_ratio_after_5_published_steps", published_growth}};
  return {r, s};
}

}  // namespace kvo
