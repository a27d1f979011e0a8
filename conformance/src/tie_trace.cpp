#include "kvo/conformance/tie_trace.hpp"

#include <cmath>
#include <random>
#include <string>

#include "kvo/core/error.hpp"

namespace kvo::conformance {
namespace {

// An empty trace of the kit's shape, with its provenance.
Trace kit_trace(int layers, int heads, int kv_heads, int tokens, int prompt_len, const char* model,
                std::uint64_t seed) {
  Trace tr;
  tr.n_layers = layers;
  tr.n_heads = heads;
  tr.n_kv_heads = kv_heads;
  tr.n_tokens = tokens;
  tr.prompt_len = prompt_len;
  tr.metadata["model"] = model;
  tr.metadata["seed"] = std::to_string(seed);
  tr.resize_layers(layers);
  return tr;
}

}  // namespace

std::vector<int> tied_pairs(const TieTraceOptions& o) {
  std::vector<int> out;
  for (int b = o.pair_every; b < o.tokens; b += o.pair_every) out.push_back(b);
  return out;
}

Trace tie_trace(const TieTraceOptions& o) {
  require(o.layers >= 1 && o.heads >= 1 && o.kv_heads >= 1 && o.tokens >= 2,
          "tie trace: layers, heads and kv_heads must be at least 1 and tokens at least 2");
  require(o.heads % o.kv_heads == 0, "tie trace: heads (" + std::to_string(o.heads) +
                                         ") must be a multiple of kv_heads (" + std::to_string(o.kv_heads) + ")");
  require(o.pair_every >= 2, "tie trace: pair_every must be at least 2");
  require(o.prompt_len >= 0 && o.prompt_len <= o.tokens, "tie trace: prompt_len must lie in [0, tokens]");
  const int n = o.tokens;
  std::vector<char> later(static_cast<size_t>(n), 0);
  for (int b : tied_pairs(o)) later[static_cast<size_t>(b)] = 1;
  Trace tr = kit_trace(o.layers, o.heads, o.kv_heads, n, o.prompt_len, "conformance-tie-trace", o.seed);
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int> weight(2, 5);
  const size_t nn = static_cast<size_t>(n) * static_cast<size_t>(n);
  for (int l = 0; l < o.layers; ++l) {
    std::vector<float>& a = tr.attn[static_cast<size_t>(l)];
    a.assign(static_cast<size_t>(o.heads) * nn, 0.0f);
    // The heads of a KV group see the same rows, so that their mean keeps the ties exact.
    for (int g = 0; g < o.kv_heads; ++g) {
      std::vector<int> c(static_cast<size_t>(n));
      std::vector<std::vector<float>> rows(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        double sum = 0.0;
        for (int j = 0; j <= i; ++j) {
          c[static_cast<size_t>(j)] = weight(rng);
          // A pair's tokens get the lowest weight, so that they are the victims' candidates.
          if (later[static_cast<size_t>(j)] || (j + 1 < n && later[static_cast<size_t>(j + 1)]))
            c[static_cast<size_t>(j)] = 1;
          if (j + 1 < n && later[static_cast<size_t>(j + 1)] && i == j) c[static_cast<size_t>(j)] = 0;
          sum += c[static_cast<size_t>(j)];
        }
        rows[static_cast<size_t>(i)].resize(static_cast<size_t>(i) + 1);
        for (int j = 0; j <= i; ++j)
          rows[static_cast<size_t>(i)][static_cast<size_t>(j)] = static_cast<float>(c[static_cast<size_t>(j)] / sum);
      }
      for (int h = g * tr.group_size(); h < (g + 1) * tr.group_size(); ++h)
        for (int i = 0; i < n; ++i)
          for (int j = 0; j <= i; ++j)
            a[static_cast<size_t>(h) * nn + static_cast<size_t>(i) * static_cast<size_t>(n) + static_cast<size_t>(j)] =
                rows[static_cast<size_t>(i)][static_cast<size_t>(j)];
    }
  }
  tr.validate();
  return tr;
}

std::vector<int> heavy_keys(const PressTraceOptions& o, int layer, int kv_head) {
  std::vector<int> out;
  const int offset = 2 + (layer * o.kv_heads + kv_head) % o.heavy_every;
  for (int j = offset; j < o.tokens; j += o.heavy_every) out.push_back(j);
  return out;
}

Trace press_tie_trace(const PressTraceOptions& o) {
  require(o.layers >= 1 && o.heads >= 1 && o.kv_heads >= 1,
          "press trace: layers, heads and kv_heads must be at least 1");
  require(o.tokens >= 2 && o.head_dim >= 2, "press trace: tokens and head_dim must be at least 2");
  require(o.heads % o.kv_heads == 0, "press trace: heads (" + std::to_string(o.heads) +
                                         ") must be a multiple of kv_heads (" + std::to_string(o.kv_heads) + ")");
  require(o.heavy_every >= 2, "press trace: heavy_every must be at least 2");
  const int n = o.tokens, d = o.head_dim;
  Trace tr = kit_trace(o.layers, o.heads, o.kv_heads, n, n, "conformance-press-trace", o.seed);
  tr.head_dim = d;
  tr.attn_scale = 1.0 / std::sqrt(static_cast<double>(d));  // kvpress's 1 / sqrt(head_dim)
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t nd = static_cast<size_t>(n) * static_cast<size_t>(d);
  for (int l = 0; l < o.layers; ++l) {
    std::vector<float>& q = tr.q[static_cast<size_t>(l)];
    std::vector<float>& k = tr.k[static_cast<size_t>(l)];
    std::vector<float>& v = tr.v[static_cast<size_t>(l)];
    q.resize(static_cast<size_t>(o.heads) * nd);
    k.resize(static_cast<size_t>(o.kv_heads) * nd);
    v.resize(static_cast<size_t>(o.kv_heads) * nd);
    // Every query leans along dimension 0 by the same amount: a heavy key's logit exceeds the
    // background's by its multiple of that lean, whatever the rest of the query.
    for (size_t x = 0; x < q.size(); ++x) q[x] = x % static_cast<size_t>(d) == 0 ? 2.0f : normal(rng);
    for (int h = 0; h < o.kv_heads; ++h) {
      std::vector<float> background(static_cast<size_t>(d));
      for (int x = 0; x < d; ++x) background[static_cast<size_t>(x)] = x == 0 ? 0.0f : 0.5f * normal(rng);
      const std::vector<int> heavy = heavy_keys(o, l, h);
      for (int j = 0; j < n; ++j) {
        float* row = k.data() + static_cast<size_t>(h) * nd + static_cast<size_t>(j) * static_cast<size_t>(d);
        std::copy(background.begin(), background.end(), row);
        for (size_t m = 0; m < heavy.size(); ++m)
          if (heavy[m] == j) row[0] = 1.0f + 0.75f * static_cast<float>(m);  // distinct heavy keys
      }
      for (size_t x = 0; x < nd; ++x) v[static_cast<size_t>(h) * nd + x] = normal(rng);
    }
  }
  tr.validate();
  return tr;
}

}  // namespace kvo::conformance
