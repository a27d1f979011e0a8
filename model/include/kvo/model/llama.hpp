// The Llama architecture (SmolLM2) on Eigen, fp32: RMSNorm, RoPE on adjacent pairs (GGUF's
// permuted q/k layout) with the file's theta, grouped-query attention, SwiGLU MLP and tied
// embeddings, with a KV cache. A tap sees every layer's post-RoPE q, k and v (the recorder).
#pragma once
#include <Eigen/Dense>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kvo/model/tokenizer.hpp"

namespace kvo::model {

using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct LlamaConfig {
  std::string name;
  int n_layers = 0, d_model = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, d_ff = 0, vocab = 0, context = 0;
  double rope_theta = 10000.0, rms_eps = 1e-5;
};

// Receives, per layer, the rows of a forward call: q [T, H*hd] and k, v [T, H_kv*hd], post-RoPE,
// for the positions first_pos .. first_pos + T - 1.
class LayerTap {
 public:
  virtual ~LayerTap() = default;
  virtual void on_layer(int layer, int first_pos, const MatrixRM& q, const MatrixRM& k, const MatrixRM& v) = 0;
};

// Attention of one new token, supplied by the caller of Llama::decode_step: gets the layer's
// post-RoPE q [H*hd] and the new k, v [H_kv*hd] at position pos, keeps whatever K/V it wants, and
// returns the attention output [H*hd] (before the output projection).
class StepAttention {
 public:
  virtual ~StepAttention() = default;
  virtual Eigen::RowVectorXf attend(int layer, int pos, const Eigen::RowVectorXf& q, const Eigen::RowVectorXf& k,
                                    const Eigen::RowVectorXf& v) = 0;
};

// Attention of a block of new tokens in one layer, supplied by the caller of Llama::forward_layered:
// gets the layer's post-RoPE q [T, H*hd] and new k, v [T, H_kv*hd] at positions pos0 .. pos0 + T - 1,
// keeps whatever K/V it wants, and writes the attention output `out` [T, H*hd] (before the output
// projection). Row t may read only what rows < t and its own k, v left (causal).
class LayerAttention {
 public:
  virtual ~LayerAttention() = default;
  virtual void attend_layer(int layer, int pos0, const MatrixRM& q, const MatrixRM& k, const MatrixRM& v,
                            MatrixRM& out) = 0;
};

struct KvCache {
  int length = 0;
  int capacity = 0;
  std::vector<MatrixRM> k, v;  // per layer: [capacity, H_kv*hd]
  // A compressed cache: KV head h of layer l reads rows start[l * H_kv + h].. only (empty: every
  // row), so the heads of a layer may keep different counts, each right-aligned below the longest;
  // row r sits at RoPE position r + position_shift, so tokens appended after a pruned prompt of P
  // tokens keep positions P, P+1, ...
  std::vector<int> start;
  int position_shift = 0;
  size_t bytes() const;
};

class Llama {
 public:
  // Loads and dequantises every weight; kvo::Error for a file that is not a usable Llama GGUF.
  explicit Llama(const std::string& gguf_path);
  ~Llama();

  const LlamaConfig& config() const { return cfg_; }
  const Tokenizer& tokenizer() const { return *tok_; }
  const std::string& path() const { return path_; }

  KvCache new_cache(int capacity) const;
  // Runs tokens at rows cache.length.. (positions + cache.position_shift), appends their K/V, and
  // returns logits [T, vocab] (an empty matrix when want_logits is false).
  MatrixRM forward(std::span<const int> tokens, KvCache& cache, bool want_logits = true, LayerTap* tap = nullptr) const;
  // One token at position pos with attention (and so the KV cache) delegated to `attention`;
  // returns the logits [vocab].
  Eigen::RowVectorXf decode_step(int token, int pos, StepAttention& attention) const;
  // Tokens at positions pos0.. run layer by layer, every layer's projections and MLP batched, its
  // attention delegated to `attention` (the same computation as decode_step token by token when
  // the attention is causal). Returns the logits [T, vocab], or of the last token only [1, vocab].
  MatrixRM forward_layered(std::span<const int> tokens, int pos0, LayerAttention& attention,
                           bool all_logits = false) const;

 private:
  struct Layer;
  // Pre-attention half of a layer: RMSNorm, q/k/v projections, RoPE at positions pos0.. (h: scratch).
  void project_qkv(const Layer& L, const MatrixRM& x, int pos0, MatrixRM& h, MatrixRM& q, MatrixRM& k,
                   MatrixRM& v) const;
  // Post-attention half: x += att W_o^T, then x += SwiGLU MLP (h, g, u: scratch).
  void add_output_and_mlp(const Layer& L, const MatrixRM& att, MatrixRM& x, MatrixRM& h, MatrixRM& g,
                          MatrixRM& u) const;
  std::string path_;
  LlamaConfig cfg_;
  std::unique_ptr<Tokenizer> tok_;
  MatrixRM embed_;  // [vocab, d_model], tied with the output
  Eigen::VectorXf out_norm_;
  std::vector<Layer> layers_;
};

// Mean negative log-likelihood (nats) of tokens[1..] under teacher forcing, full attention,
// processed in chunks of `chunk` tokens.
double mean_nll(const Llama& model, std::span<const int> tokens, int chunk = 256);

}  // namespace kvo::model
