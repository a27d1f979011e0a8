#include "kvo/core/trace.hpp"

#include <cmath>

#include "kvo/core/error.hpp"

namespace kvo {
namespace {

void check_tensor(const std::vector<float>& t, const char* name, int layer, int heads, int rows, int cols) {
  if (t.empty()) return;
  const size_t want = static_cast<size_t>(heads) * rows * cols;
  require(t.size() == want, std::string("layer ") + std::to_string(layer) + " tensor " + name + " holds " +
                                std::to_string(t.size()) + " values, expected " + std::to_string(want));
  for (size_t x = 0; x < t.size(); ++x) {
    if (!std::isfinite(t[x])) {
      const size_t per_head = static_cast<size_t>(rows) * cols;
      const size_t head = x / per_head;
      const size_t pos = (x % per_head) / static_cast<size_t>(cols), col = x % static_cast<size_t>(cols);
      throw Error(std::string(std::isnan(t[x]) ? "NaN" : "Inf") + " in " + name + " at layer " + std::to_string(layer) +
                  ", head " + std::to_string(head) + ", position " + std::to_string(pos) +
                  (std::string(name) == "attn" ? ", key " : ", dimension ") + std::to_string(col));
    }
  }
}

}  // namespace

void Trace::resize_layers(int layers) {
  n_layers = layers;
  q.assign(static_cast<size_t>(layers), {});
  k.assign(static_cast<size_t>(layers), {});
  v.assign(static_cast<size_t>(layers), {});
  attn.assign(static_cast<size_t>(layers), {});
}

void Trace::validate() const {
  require(n_layers >= 1, "trace has no layers");
  require(n_tokens >= 1, "trace has no tokens");
  require(n_heads >= 1 && n_kv_heads >= 1, "trace has no heads");
  require(n_heads % n_kv_heads == 0, "query heads (" + std::to_string(n_heads) + ") are not a multiple of KV heads (" +
                                         std::to_string(n_kv_heads) + ")");
  require(std::isfinite(attn_scale) && attn_scale > 0, "trace attention scale must be finite and > 0");
  require(prompt_len >= 0 && prompt_len <= n_tokens, "trace prompt length is outside [0, n]");
  require(tokens.empty() || static_cast<int>(tokens.size()) == n_tokens,
          "trace token ids disagree with the sequence length");
  require(static_cast<int>(q.size()) == n_layers && static_cast<int>(k.size()) == n_layers &&
              static_cast<int>(v.size()) == n_layers && static_cast<int>(attn.size()) == n_layers,
          "trace layer tables are inconsistent");
  for (int l = 0; l < n_layers; ++l) {
    require(q[l].empty() == k[l].empty(), "layer " + std::to_string(l) + " has only one of q and k");
    require(has_qk(l) || has_attention(l),
            "layer " + std::to_string(l) + " has neither q and k nor a dense attention tensor");
    if (has_qk(l) || has_values(l)) require(head_dim >= 1, "trace head dimension must be >= 1");
    check_tensor(q[l], "q", l, n_heads, n_tokens, head_dim);
    check_tensor(k[l], "k", l, n_kv_heads, n_tokens, head_dim);
    check_tensor(v[l], "v", l, n_kv_heads, n_tokens, head_dim);
    check_tensor(attn[l], "attn", l, n_heads, n_tokens, n_tokens);
  }
}

}  // namespace kvo
