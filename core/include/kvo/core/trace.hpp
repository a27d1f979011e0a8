// An attention trace in memory: per layer, post-RoPE queries q [H, n, d], keys and values
// [H_kv, n, d] and/or a dense attention tensor [H, n, n]; token ids and metadata.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvo {

struct Trace {
  int n_layers = 0;
  int n_heads = 0;          // query heads H
  int n_kv_heads = 0;       // KV heads H_kv; H is a multiple of H_kv (grouped-query attention)
  int n_tokens = 0;         // n
  int head_dim = 0;         // d (0 when the trace holds dense attention only)
  double attn_scale = 1.0;  // logits = attn_scale * q_i . k_j
  int prompt_len = 0;
  std::map<std::string, std::string> metadata;  // free-form provenance (model, text source, ...)
  std::vector<std::int32_t> tokens;             // [n], may be empty

  // Per layer, row-major; an empty vector means "absent in this layer".
  std::vector<std::vector<float>> q;     // [H, n, d]
  std::vector<std::vector<float>> k;     // [H_kv, n, d]
  std::vector<std::vector<float>> v;     // [H_kv, n, d]
  std::vector<std::vector<float>> attn;  // [H, n, n] dense causal probabilities

  int group_size() const { return n_kv_heads > 0 ? n_heads / n_kv_heads : 1; }
  int kv_head_of(int head) const { return head / group_size(); }
  bool has_qk(int layer) const { return !q[layer].empty() && !k[layer].empty(); }
  bool has_values(int layer) const { return !v[layer].empty(); }
  bool has_attention(int layer) const { return !attn[layer].empty(); }

  // Checks shapes and that every value is finite; kvo::Error naming the first problem with its
  // tensor, layer, head and position.
  void validate() const;
  // Allocates empty per-layer slots for the given sizes (tensors left empty).
  void resize_layers(int layers);
};

}  // namespace kvo
