// Decoding with a KV cache that really evicts: per (layer, KV head) a pool of budget + 1 rows of
// K and V; each step the new token takes a free row, every query head of the group attends the
// rows held, the eviction manager gets the group's mean attention and names the positions to
// evict, and their rows are freed for the next token. Memory held is the pools, reported in bytes.
#pragma once
#include <vector>

#include "kvo/core/cache_manager.hpp"
#include "kvo/model/llama.hpp"

namespace kvo::model {

class EvictingDecoder final : public StepAttention {
 public:
  // slots: rows per (layer, KV head) pool; at least the largest budget + 1 (the new token).
  EvictingDecoder(const Llama& model, KvEvictionManager& manager, int slots, int seq = 0);

  // Feeds the next token (position = tokens fed so far); returns the logits [vocab].
  Eigen::RowVectorXf step(int token);

  int position() const { return pos_; }
  size_t bytes_allocated() const;  // the K/V pools
  size_t bytes_held() const;       // rows holding a token now
  size_t peak_bytes_held() const { return peak_; }

  Eigen::RowVectorXf attend(int layer, int pos, const Eigen::RowVectorXf& q, const Eigen::RowVectorXf& k,
                            const Eigen::RowVectorXf& v) override;

 private:
  struct Pool {
    MatrixRM k, v;          // [slots, hd]
    std::vector<int> pos;   // position held by each row; -1: free
    std::vector<int> rows;  // occupied rows in position order
  };
  Pool& pool(int layer, int kv_head) { return pools_[static_cast<size_t>(layer * n_kv_ + kv_head)]; }
  const Llama& model_;
  KvEvictionManager& manager_;
  int seq_, slots_, n_kv_, hd_, group_;
  int pos_ = 0;
  size_t held_rows_ = 0, peak_ = 0;
  std::vector<Pool> pools_;
};

}  // namespace kvo::model
