#include "kvo/core/synth.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <random>
#include <type_traits>

#include "kvo/core/error.hpp"
#include "kvo/core/json_fields.hpp"

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

namespace {

constexpr SynthOptionEntry kSynthOptions[] = {
    {"layers", "--layers", &SynthOptions::layers, "layers"},
    {"heads", "--heads", &SynthOptions::heads, "query heads"},
    {"kv_heads", "--kv-heads", &SynthOptions::kv_heads, "KV heads (grouped-query attention)"},
    {"tokens", "--tokens", &SynthOptions::tokens, "sequence length"},
    {"head_dim", "--head-dim", &SynthOptions::head_dim, "head dimension"},
    {"prompt_len", "--prompt-len", &SynthOptions::prompt_len, "prompt length recorded in the metadata"},
    {"sinks", "--sinks", &SynthOptions::sinks, "attention-sink tokens at the start"},
    {"zipf", "--zipf", &SynthOptions::zipf, "Zipf exponent of key importance"},
    {"importance", "--importance", &SynthOptions::importance, "logit of the most important key"},
    {"recency", "--recency", &SynthOptions::recency, "logit boost of recent keys"},
    {"noise", "--noise", &SynthOptions::noise, "standard deviation of random logits"},
    {"seed", "--seed", &SynthOptions::seed, "random seed"},
};

}  // namespace

std::span<const SynthOptionEntry> synth_option_table() { return kSynthOptions; }

nlohmann::json to_json(const SynthOptions& o) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& e : kSynthOptions) std::visit([&](auto f) { j[std::string(e.name)] = o.*f; }, e.field);
  return j;
}

SynthOptions synth_options_from_json(const nlohmann::json& j) {
  SynthOptions o;
  read_json_fields(j, "synth options", [&](const std::string& key, const nlohmann::json& value) {
    for (const auto& e : kSynthOptions) {
      if (e.name != key) continue;
      std::visit(
          [&](auto f) {
            using T = std::remove_reference_t<decltype(o.*f)>;
            // A whole number where an integer is wanted (3.5 is refused, not truncated).
            require(std::is_floating_point_v<T> ? value.is_number() : value.is_number_integer(),
                    "synth options: '" + key + "' has the wrong type: " + value.dump());
            if constexpr (std::is_same_v<T, std::uint64_t>)
              require(value.is_number_unsigned() || value.get<long long>() >= 0, "synth options: seed must be >= 0");
            o.*f = value.get<T>();
          },
          e.field);
      return true;
    }
    return false;
  });
  return o;
}

}  // namespace kvo
