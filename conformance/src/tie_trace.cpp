#include "kvo/conformance/tie_trace.hpp"

#include <random>
#include <string>

#include "kvo/core/error.hpp"

namespace kvo::conformance {

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
  Trace tr;
  tr.n_layers = o.layers;
  tr.n_heads = o.heads;
  tr.n_kv_heads = o.kv_heads;
  tr.n_tokens = n;
  tr.prompt_len = o.prompt_len;
  tr.metadata["model"] = "conformance-tie-trace";
  tr.metadata["seed"] = std::to_string(o.seed);
  tr.resize_layers(o.layers);
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

}  // namespace kvo::conformance
