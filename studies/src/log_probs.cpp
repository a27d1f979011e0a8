#include "log_probs.hpp"

#include <algorithm>
#include <cmath>

namespace kvo::studies {

std::vector<double> log_softmax(const Eigen::Ref<const Eigen::RowVectorXf>& row) {
  const double m = row.maxCoeff();
  double s = 0.0;
  for (Eigen::Index t = 0; t < row.size(); ++t) s += std::exp(row(t) - m);
  const double lse = m + std::log(s);
  std::vector<double> out(static_cast<size_t>(row.size()));
  for (Eigen::Index t = 0; t < row.size(); ++t) out[static_cast<size_t>(t)] = row(t) - lse;
  return out;
}

double kl_divergence(const std::vector<double>& lp, const std::vector<double>& lq) {
  double d = 0.0;
  for (size_t v = 0; v < lp.size(); ++v) d += std::exp(lp[v]) * (lp[v] - lq[v]);
  return std::max(0.0, d);
}

}  // namespace kvo::studies
