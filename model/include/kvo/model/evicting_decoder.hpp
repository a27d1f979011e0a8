// Decoding with a KV cache that really evicts: per (layer, KV head) a pool of budget + 1 rows of
// K and V; each step the new token takes a free row, every query head of the group attends the
// rows held, the eviction manager gets the group's mean attention and names the positions to
// evict, and their rows are freed for the next token. Memory held is the pools, reported in bytes.
// prefill() feeds a whole input at the cost of one prefill: layer by layer, every token's q, k, v
// from the previous layer's (already evicted) outputs, this layer's attention and evictions
// replayed step by step, projections and MLP batched; the state it leaves equals step() token by
// token's, so step() then continues (answer generation). Under a shared budget the KV heads of a
// layer step in lockstep; a model-wide budget (or kept set) that may evict inside the fed span
// (KvEvictionManager::lockstep_at) goes token by token.
#pragma once
#include <span>
#include <vector>

#include "kvo/core/cache_manager.hpp"
#include "kvo/model/kv_quant.hpp"
#include "kvo/model/llama.hpp"

namespace kvo::model {

// The pools' shape without a model: another implementation's attention layers (kvoracle.hf's
// EvictingCache for transformers models) feed attend_layer() themselves.
struct PoolShape {
  int n_layers = 0, n_kv_heads = 0, head_dim = 0, group = 1;  // group: query heads per KV head
  float scale = 0.0f;                                         // the logits' scale (Llama: 1 / sqrt(head_dim))
};

class EvictingDecoder final : public StepAttention, public LayerAttention {
 public:
  // slots: rows per (layer, KV head) pool; at least the largest budget + 1 (the new token).
  EvictingDecoder(const Llama& model, KvEvictionManager& manager, int slots, int seq = 0);
  // Pools only: step() and prefill() refuse (no model); attend() and attend_layer() work as above.
  EvictingDecoder(const PoolShape& shape, KvEvictionManager& manager, int slots, int seq = 0);

  // Feeds the next token (position = tokens fed so far); returns the logits [vocab].
  Eigen::RowVectorXf step(int token);
  // Feeds tokens at the next positions layer by layer; returns the logits [T, vocab], or of the
  // last token only [1, vocab].
  MatrixRM prefill(std::span<const int> tokens, bool all_logits = false);

  // Stores every later key and value row quantized (kv_quant.hpp); off by default.
  void set_kv_quantization(const KvQuantization& q);

  int position() const { return pos_; }
  PoolShape shape() const { return {n_layers_, n_kv_, hd_, group_, scale_}; }
  size_t bytes_allocated() const;  // the K/V pools
  size_t bytes_held() const;       // rows holding a token now
  // The most rows held at once (after a prefill under per-head budgets: the sum over pools of each
  // pool's most, the same whenever every pool is fullest at the same step, as under a fixed budget;
  // under shared budgets the prefill counts the rows of every layer step by step).
  size_t peak_bytes_held() const { return peak_; }
  // Positions a (layer, KV head) pool holds now, ascending.
  std::vector<int> held(int layer, int kv_head) const;
  // Keeps every eviction a step decides (per-head budgets: a step's own unit); off by default.
  void set_eviction_log(bool on) { log_ = on; }
  struct Eviction {
    int step = 0;  // the position whose step evicted
    std::vector<int> gone;
  };
  const std::vector<Eviction>& evictions(int layer, int kv_head) const { return pool(layer, kv_head).log; }

  Eigen::RowVectorXf attend(int layer, int pos, const Eigen::RowVectorXf& q, const Eigen::RowVectorXf& k,
                            const Eigen::RowVectorXf& v) override;
  void attend_layer(int layer, int pos0, const MatrixRM& q, const MatrixRM& k, const MatrixRM& v,
                    MatrixRM& out) override;

 private:
  struct Pool {
    MatrixRM k, v;          // [slots, hd]
    std::vector<int> pos;   // position held by each row; -1: free
    std::vector<int> rows;  // occupied rows in position order
    size_t most = 0;        // the most rows held after a step
    std::vector<Eviction> log;
  };
  struct Scratch {
    std::vector<int> positions;
    std::vector<double> agg, p;
    std::vector<float> w, top;  // the group's weights, head after head; each head's largest logit
  };
  Pool& pool(int layer, int kv_head) { return pools_[static_cast<size_t>(layer * n_kv_ + kv_head)]; }
  const Pool& pool(int layer, int kv_head) const { return pools_[static_cast<size_t>(layer * n_kv_ + kv_head)]; }
  // One token at one (layer, KV head): takes a free row for k, v, attends the group's query heads
  // (q: the token's [H*hd] row) over the rows held, writes their outputs to out, evicts.
  void attend_unit(int layer, int kv, int pos, const float* q, const float* k, const float* v, float* out, Scratch& s);
  size_t held_rows() const;
  // The group's outputs out[g * head_dim ...] from its weights w[g * m + t] over the rows held.
  void weighted_values(const Pool& P, const float* w, size_t m, float* out) const;
  // Frees the rows of `gone` (and removes them from `positions` when given).
  void drop(Pool& P, std::span<const int> gone, std::vector<int>* positions = nullptr);
  // A shared budget's evictions from the layer's pools that other units' steps decided; notes the most held.
  void settle(int layer);
  size_t layer_rows(int layer) const;
  const Llama* model_;  // null: pools only
  KvEvictionManager& manager_;
  int seq_, slots_, n_layers_, n_kv_, hd_, group_;
  float scale_;
  bool log_ = false;
  int pos_ = 0;
  KvQuantization quant_;
  size_t held_rows_ = 0, peak_ = 0;
  std::vector<Pool> pools_;
  std::vector<std::vector<size_t>> span_rows_;  // layered prefill, shared budgets: rows per layer after each step
};

// The closed loops' manager (eval, tasks, diversity): the run's parameters with policy `id`, the
// budget given (its total per (layer, KV head), its recent part and overrides), every step an
// eviction step (no prompt held whole), the model's units, sequences of up to max_len tokens.
CacheManagerOptions closed_loop_manager(const LlamaConfig& config, const RunConfig& run, PolicyId id,
                                        const Budget& budget, int max_len);
// The pool rows a decoder needs under a manager: its largest unit budget plus the new token (with
// a prompt_len, the whole prompt, which the manager holds until it ends).
int decoder_slots(const KvEvictionManager& manager);

}  // namespace kvo::model
