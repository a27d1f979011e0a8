#include "kvo/core/synth.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <random>
#include <type_traits>

#include "kvo/core/error.hpp"

namespace kvo {
namespace {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : g_(seed) {}
  double uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }
  double gauss() {
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  std::uint64_t next() { return g_(); }

 private:
  std::mt19937_64 g_;
};

constexpr int kFreqs = 4;  // recency: sum of cosines at these frequencies peaks at lag 0

}  // namespace

Trace synthesize(const SynthOptions& o) {
  require(o.layers >= 1 && o.heads >= 1 && o.kv_heads >= 1 && o.tokens >= 2,
          "synth: layers, heads and kv_heads must be >= 1 and tokens >= 2");
  require(o.heads % o.kv_heads == 0, "synth: heads must be a multiple of kv_heads");
  require(o.head_dim >= 2 * kFreqs + 2, "synth: head_dim must be >= " + std::to_string(2 * kFreqs + 2));
  require(o.prompt_len >= 0 && o.prompt_len <= o.tokens, "synth: prompt_len must be in [0, tokens]");
  require(o.sinks >= 0 && o.sinks <= o.tokens, "synth: sinks must be in [0, tokens]");
  const int n = o.tokens, d = o.head_dim;
  const int noise_dims = d - 2 * kFreqs - 1;  // last 2*kFreqs+1 dims: importance and recency
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const double q_boost = 1.0 / scale;  // logits = scale * q.k, designed in unscaled units
  Trace tr;
  tr.resize_layers(o.layers);
  tr.n_heads = o.heads;
  tr.n_kv_heads = o.kv_heads;
  tr.n_tokens = n;
  tr.head_dim = d;
  tr.attn_scale = scale;
  tr.prompt_len = o.prompt_len;
  tr.metadata = {{"model", std::string(kSyntheticModel)}, {"source", "kvoracle synth seed=" + std::to_string(o.seed)}};
  Rng rng(o.seed);
  tr.tokens.resize(static_cast<size_t>(n));
  for (auto& t : tr.tokens) t = static_cast<std::int32_t>(rng.next() % 32000);
  const double freq_amp = std::sqrt(o.recency / kFreqs);
  const double noise_amp = std::sqrt(o.noise / std::max(noise_dims, 1));
  for (int l = 0; l < o.layers; ++l) {
    tr.q[l].assign(static_cast<size_t>(o.heads) * n * d, 0.f);
    tr.k[l].assign(static_cast<size_t>(o.kv_heads) * n * d, 0.f);
    tr.v[l].assign(static_cast<size_t>(o.kv_heads) * n * d, 0.f);
    for (int kv = 0; kv < o.kv_heads; ++kv) {
      std::vector<int> rank(static_cast<size_t>(n));
      std::iota(rank.begin(), rank.end(), 1);
      for (int j = n - 1; j > 0; --j) std::swap(rank[j], rank[rng.next() % static_cast<std::uint64_t>(j + 1)]);
      for (int j = 0; j < n; ++j) {
        float* kj = &tr.k[l][(static_cast<size_t>(kv) * n + j) * d];
        float* vj = &tr.v[l][(static_cast<size_t>(kv) * n + j) * d];
        for (int x = 0; x < noise_dims; ++x) kj[x] = static_cast<float>(noise_amp * rng.gauss());
        double imp = o.importance * std::pow(static_cast<double>(rank[j]), -o.zipf);
        if (j < o.sinks) imp = o.importance + 2.0;
        kj[noise_dims] = static_cast<float>(imp);
        for (int f = 0; f < kFreqs; ++f) {
          const double w = std::numbers::pi / (8.0 * std::pow(2.0, f));
          kj[noise_dims + 1 + 2 * f] = static_cast<float>(freq_amp * std::cos(w * j));
          kj[noise_dims + 2 + 2 * f] = static_cast<float>(freq_amp * std::sin(w * j));
        }
        for (int x = 0; x < d; ++x) vj[x] = static_cast<float>(rng.gauss());
      }
    }
    for (int h = 0; h < o.heads; ++h) {
      const double imp_weight = 0.5 + rng.uniform();  // heads of a group weigh importance differently
      for (int i = 0; i < n; ++i) {
        float* qi = &tr.q[l][(static_cast<size_t>(h) * n + i) * d];
        for (int x = 0; x < noise_dims; ++x) qi[x] = static_cast<float>(q_boost * rng.gauss());
        qi[noise_dims] = static_cast<float>(q_boost * imp_weight);
        for (int f = 0; f < kFreqs; ++f) {
          const double w = std::numbers::pi / (8.0 * std::pow(2.0, f));
          qi[noise_dims + 1 + 2 * f] = static_cast<float>(q_boost * freq_amp * std::cos(w * i));
          qi[noise_dims + 2 + 2 * f] = static_cast<float>(q_boost * freq_amp * std::sin(w * i));
        }
      }
    }
  }
  return tr;
}

std::string trace_text_missing(const Trace& tr) {
  if (static_cast<int>(tr.tokens.size()) < tr.n_tokens) return "the trace holds no token ids";
  if (const auto it = tr.metadata.find("model"); it != tr.metadata.end() && it->second == kSyntheticModel)
    return "a synthetic trace's token ids are random, not text";
  return "";
}

const Schema<SynthOptions>& synth_options_schema() {
  using O = SynthOptions;
  static const Schema<SynthOptions> schema(
      "synth options",
      {
          member(&O::layers, {.name = "layers", .help = "layers"}),
          member(&O::heads, {.name = "heads", .help = "query heads"}),
          member(&O::kv_heads, {.name = "kv_heads", .help = "KV heads (grouped-query attention)"}),
          member(&O::tokens, {.name = "tokens", .help = "sequence length", .alias = "-n"}),
          member(&O::head_dim, {.name = "head_dim", .help = "head dimension"}),
          member(&O::prompt_len, {.name = "prompt_len", .help = "prompt length recorded in the metadata"}),
          member(&O::sinks, {.name = "sinks", .help = "attention-sink tokens at the start"}),
          member(&O::zipf, {.name = "zipf", .help = "Zipf exponent of key importance"}),
          member(&O::importance, {.name = "importance", .help = "logit of the most important key"}),
          member(&O::recency, {.name = "recency", .help = "logit boost of recent keys"}),
          member(&O::noise, {.name = "noise", .help = "standard deviation of random logits"}),
          member(&O::seed, {.name = "seed", .help = "random seed"}),
      });
  return schema;
}

}  // namespace kvo
