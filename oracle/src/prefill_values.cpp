#include "prefill_values.hpp"

#include <cmath>

#include "kvo/core/error.hpp"

namespace kvo {

Eigen::MatrixXd kv_values(const Trace& tr, int layer, int kv_head) {
  require(layer >= 0 && layer < tr.n_layers && tr.has_values(layer),
          "prefill: layer " + std::to_string(layer) + " holds no values (output fidelity reads them)");
  require(kv_head >= 0 && kv_head < tr.n_kv_heads,
          "prefill: KV head " + std::to_string(kv_head) + " is not in the trace");
  const int n = tr.n_tokens, d = tr.head_dim;
  const float* v = tr.v[static_cast<size_t>(layer)].data() + static_cast<size_t>(kv_head) * n * d;
  Eigen::MatrixXd out(n, d);
  for (int j = 0; j < n; ++j)
    for (int c = 0; c < d; ++c) out(j, c) = v[static_cast<size_t>(j) * d + c];
  return out;
}

PromptEccentricities::PromptEccentricities(const Eigen::MatrixXd& values, int prompt_len)
    : vt_(values.transpose()), p_(prompt_len), start_(Eigen::VectorXd::Zero(prompt_len)) {
  require(prompt_len >= 1 && prompt_len <= values.rows(), "prefill: prompt length outside the values");
  for (int i = 1; i < p_; ++i) {  // pair (i, j < i) updates both ends
    const Eigen::RowVectorXd d2 = (vt_.leftCols(i).colwise() - vt_.col(i)).colwise().squaredNorm();
    start_.head(i) = start_.head(i).cwiseMax(d2.transpose());
    start_(i) = std::max(start_(i), d2.maxCoeff());
  }
  r2_ = start_;
}

void PromptEccentricities::advance(int t) {
  r2_ = r2_.cwiseMax((vt_.leftCols(p_).colwise() - vt_.col(t)).colwise().squaredNorm().transpose());
}

double PromptEccentricities::operator[](int j) const { return std::sqrt(r2_(j)); }

}  // namespace kvo
