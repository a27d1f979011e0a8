// Next-token log-probabilities in fp64 and the KL divergence between two of them: what eval and
// eval --prefill compare a compressed cache's predictions with.
#pragma once
#include <Eigen/Dense>
#include <vector>

namespace kvo::studies {

// log-softmax of a logits row in fp64.
std::vector<double> log_softmax(const Eigen::Ref<const Eigen::RowVectorXf>& row);
// KL(p || q) of two log-probability rows, clamped at 0 (rounding can make it slightly negative).
double kl_divergence(const std::vector<double>& log_p, const std::vector<double>& log_q);

}  // namespace kvo::studies
