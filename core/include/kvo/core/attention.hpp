// Attention of one (layer, query head) of a trace: logits q_i . k_j (scaled) or log a_ij from a
// dense tensor, softmax renormalised over any kept set, and the dense causal attention matrix.
// All arithmetic here is fp64.
#pragma once
#include <Eigen/Dense>
#include <memory>
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

  // A copy that also holds K in fp64 tiles (n * d doubles, shared by its copies): logits over whole
  // tiles of consecutive keys then run several times faster, with the same bits. For the views a
  // hot loop reads over every prefix (verify's head pass, the offline solver's passes).
  HeadView with_key_tiles() const;
  // logits of query i over the given keys (each <= i); -inf where dense attention is 0.
  void logits(int i, std::span<const int> keys, std::span<double> out) const;
  // The logits of several queries over their whole prefixes, the same bits as logits(i, 0..i):
  // out + b * stride receives queries[b] + 1 values. With key tiles, a block reads each tile once.
  void prefix_logits(std::span<const int> queries, double* out, size_t stride) const;
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
  // K in fp64 tiles of kKeyTile positions, each tile transposed ([d, kKeyTile], contiguous), when
  // with_key_tiles() built it: logits over a whole tile of consecutive keys read a row of 32 at a time.
  static constexpr size_t kKeyTile = 32;
  size_t tile_index(int j, int x) const {
    const auto u = static_cast<size_t>(j);
    return (u / kKeyTile) * kKeyTile * static_cast<size_t>(d_) + static_cast<size_t>(x) * kKeyTile + u % kKeyTile;
  }
  std::shared_ptr<const std::vector<double>> kt_;
  // logits of query i over the tile of keys first .. first + kKeyTile - 1 (first % kKeyTile == 0).
  void tile_logits(int i, int first, double* out) const;
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
