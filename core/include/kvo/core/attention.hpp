// Attention of one (layer, query head) of a trace: logits q_i . k_j (scaled) or log a_ij from a
// dense tensor, softmax renormalised over any kept set, and the dense causal attention matrix.
// All arithmetic here is fp64.
#pragma once
#include <Eigen/Dense>
#include <span>
#include <vector>

#include "kvo/core/trace.hpp"

namespace kvo {

class HeadView {
 public:
  HeadView(const Trace& trace, int layer, int head);

  int n() const { return n_; }
  int layer() const { return layer_; }
  int head() const { return head_; }
  bool has_values() const { return v_ != nullptr; }
  int head_dim() const { return d_; }

  // logits of query i over the given keys (each <= i); -inf where dense attention is 0.
  void logits(int i, std::span<const int> keys, std::span<double> out) const;
  // Row j of V (requires has_values()), in fp64 or as the trace stores it.
  Eigen::VectorXd value(int j) const;
  std::span<const float> value_row(int j) const;

 private:
  const Trace* trace_;
  int layer_, head_, n_, d_;
  const float* q_ = nullptr;     // [n, d] of this head
  const float* k_ = nullptr;     // [n, d] of its KV head
  const float* v_ = nullptr;     // [n, d] of its KV head
  const float* attn_ = nullptr;  // [n, n] of this head
  double scale_;
};

// out = softmax(logits) with the max subtracted (exp_fp64, normalised by lane_sum: the order every
// softmax of kvoracle shares); all -inf gives the uniform distribution.
void softmax(std::span<const double> logits, std::span<double> out);

// Query i over its whole prefix [0, i]: keys = 0..i, logits into `logits` and the causal
// probabilities into `probs` (uniform when every logit is -inf). The buffers are reused.
void prefix_attention(const HeadView& head, int i, std::vector<int>& keys, std::vector<double>& logits,
                      std::vector<double>& probs);

// Dense causal attention a(i, j) for j <= i (zeros above the diagonal), fp64.
Eigen::MatrixXd dense_attention(const HeadView& head);

}  // namespace kvo
