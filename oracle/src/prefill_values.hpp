// The values a prefill unit's output fidelity reads: one KV head's value rows in fp64 and the
// eccentricities R_j(t) = max_{i <= t} |v_i - v_j|_2 of the prompt's values behind the output bound
// (prefill_oracle.hpp).
#pragma once
#include <Eigen/Dense>
#include <vector>

#include "kvo/core/trace.hpp"

namespace kvo {

// V [n, d] of (layer, kv_head) in fp64; kvo::Error when the layer holds no values.
Eigen::MatrixXd kv_values(const Trace& trace, int layer, int kv_head);

// R_j(t) for the prompt's keys j < P as t runs P, P+1, ...: start() gives R_j(P - 1) (O(P^2 d), once),
// advance(t) takes in value t (O(P d)). Distances of differences, not of Gram entries: no cancellation.
class PromptEccentricities {
 public:
  PromptEccentricities(const Eigen::MatrixXd& values, int prompt_len);
  void start() { r2_ = start_; }
  void advance(int t);
  double operator[](int j) const;  // R_j(t) of the last advance

 private:
  Eigen::MatrixXd vt_;  // values transposed, [d, n]: one token per contiguous column
  int p_;
  Eigen::VectorXd start_, r2_;  // squared
};

}  // namespace kvo
