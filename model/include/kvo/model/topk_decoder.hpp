// Sparse attention's "oracle top-k", the reference of `kvoracle tasks` that nothing irreversible
// limits: no token is ever evicted, and every query of every layer attends only the k keys its KV
// head's group weighs most (the group's mean attention over every key so far; ties keep the
// earlier position), renormalised. An eviction policy with the same k can at best match it when an
// evicted token never matters again: the gap to it is what irreversibility costs.
#pragma once
#include <span>
#include <vector>

#include "kvo/model/llama.hpp"

namespace kvo::model {

class TopKDecoder final : public StepAttention, public LayerAttention {
 public:
  // k: keys attended per query and KV head (>= 1); capacity: positions held at most.
  TopKDecoder(const Llama& model, int k, int capacity);

  // Feeds tokens at the next positions, layer by layer (rows of a layer on threads); returns the
  // logits [T, vocab], or of the last token only [1, vocab].
  MatrixRM prefill(std::span<const int> tokens, bool all_logits = false);
  // Feeds one token; returns its logits [vocab].
  Eigen::RowVectorXf step(int token);
  int position() const { return pos_; }

  Eigen::RowVectorXf attend(int layer, int pos, const Eigen::RowVectorXf& q, const Eigen::RowVectorXf& k,
                            const Eigen::RowVectorXf& v) override;
  void attend_layer(int layer, int pos0, const MatrixRM& q, const MatrixRM& k, const MatrixRM& v,
                    MatrixRM& out) override;

 private:
  // Query at position pos (its row q, [H*hd]) of one KV head's group; writes the group's outputs.
  void attend_row(int layer, int kv, int pos, const float* q, float* out, std::vector<float>& logits,
                  std::vector<float>& mean, std::vector<int>& order) const;
  void store(int layer, int pos, const float* k, const float* v);
  const Llama& model_;
  int k_, capacity_, n_kv_, hd_, group_;
  int pos_ = 0;
  std::vector<MatrixRM> keys_, values_;  // per layer [capacity, H_kv*hd]
};

}  // namespace kvo::model
