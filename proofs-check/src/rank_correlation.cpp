#include "rank_correlation.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <boost/math/statistics/bivariate_statistics.hpp>
#include <cmath>
#include <numeric>

namespace kvo::detail {
namespace {

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double r = boost::math::statistics::correlation_coefficient(a, b);
  return std::isfinite(r) ? r : NAN;
}

// y minus its least-squares fit on [1, X].
std::vector<double> residual(const std::vector<double>& y, const Eigen::MatrixXd& X) {
  const Eigen::Map<const Eigen::VectorXd> v(y.data(), static_cast<Eigen::Index>(y.size()));
  const Eigen::VectorXd r = v - X * X.colPivHouseholderQr().solve(v);
  return {r.data(), r.data() + r.size()};
}

}  // namespace

std::vector<double> average_ranks(std::span<const double> v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
  std::vector<double> rank(v.size());
  for (size_t s = 0; s < order.size();) {
    size_t e = s + 1;
    while (e < order.size() && v[order[e]] == v[order[s]]) ++e;
    const double mean = 0.5 * static_cast<double>(s + e + 1);  // ranks s+1 .. e
    for (size_t t = s; t < e; ++t) rank[order[t]] = mean;
    s = e;
  }
  return rank;
}

double spearman(std::span<const double> a, std::span<const double> b) {
  return pearson(average_ranks(a), average_ranks(b));
}

double partial_spearman(std::span<const double> a, std::span<const double> b,
                        const std::vector<std::vector<double>>& controls) {
  const auto n = static_cast<Eigen::Index>(a.size());
  Eigen::MatrixXd X(n, static_cast<Eigen::Index>(controls.size()) + 1);
  X.col(0).setOnes();
  for (size_t c = 0; c < controls.size(); ++c) {
    const std::vector<double> r = average_ranks(controls[c]);
    X.col(static_cast<Eigen::Index>(c) + 1) = Eigen::Map<const Eigen::VectorXd>(r.data(), n);
  }
  return pearson(residual(average_ranks(a), X), residual(average_ranks(b), X));
}

}  // namespace kvo::detail
