#include "kvo/core/press.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>

#include "kvo/core/error.hpp"
#include "press_scores.hpp"

namespace kvo {
namespace {

using enum PressId;

constexpr std::array<PressEntry, kPressCount> kPresses = {{
    {ObservedAttention, "observed_attention", "ObservedAttentionPress",
     "attention a key received from the prompt's queries / the number of queries that saw it, mean over the "
     "KV head's query group (H2O's accumulated score, normalised)",
     "", false},
    {Tova, "tova", "TOVAPress",
     "the last prompt query's attention, mean over every query head of the layer (one set for all KV heads); "
     "the last token forced",
     "", false},
    {SnapKV, "snapkv", "SnapKVPress",
     "attention of the last window_size queries (mean), average-pooled over kernel_size keys, mean over the "
     "group; the window forced",
     "window_size, kernel_size", false},
    {PyramidKV, "pyramidkv", "PyramidKVPress",
     "SnapKV's score with a per-layer budget falling linearly from the first layer to the last (beta)",
     "window_size, kernel_size, beta", false},
    {Knorm, "knorm", "KnormPress", "minus the key's L2 norm", "", false},
    {KeyDiff, "keydiff", "KeyDiffPress", "minus the cosine similarity of the key to the mean normalised key", "",
     false},
    {StreamingLLM, "streaming_llm", "StreamingLLMPress", "the first n_sink tokens and the most recent ones", "n_sink",
     false},
    {LagKV, "lagkv", "LagKVPress",
     "rank within its lag_size partition of the spread (std) of its key and value, min-max normalised by the "
     "next partition; sinks and the last partitions forced",
     "n_sink, lag_size", true},
    {CUR, "cur", "CURPress",
     "|k|^2 |v|^2, each normalised within local windows (CurDKV's local leverage approximation); sinks forced",
     "n_sink (num_sinks), local_window_size", true},
    {NonCausalAttention, "non_causal_attn", "NonCausalAttnPress",
     "column sums of a non-causal attention within chunk_size tiles (unscaled q.k), mean over the group, times "
     "|v|, pooled over 3 keys, z-scored",
     "chunk_size", true},
    {Random, "random", "RandomPress", "torch.rand with torch.manual_seed(seed) on the CPU", "seed", false},
}};

constexpr bool table_in_id_order() {
  for (std::size_t i = 0; i < kPresses.size(); ++i)
    if (static_cast<std::size_t>(kPresses[i].id) != i) return false;
  return true;
}
static_assert(table_in_id_order(), "press table must list every PressId once, in enum order");

std::string known_presses() {
  std::string s;
  for (const PressEntry& e : kPresses) s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

// Positions of the k highest scores, ascending; equal scores keep the earlier position.
std::vector<int> top_k(const std::vector<double>& scores, int k) {
  std::vector<int> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  order.resize(static_cast<size_t>(std::min<std::size_t>(static_cast<std::size_t>(k), order.size())));
  std::sort(order.begin(), order.end());
  return order;
}

// PyramidKVPress.get_layer_budget; Python's round() is round-half-even (std::nearbyint's default).
int pyramid_layer_budget(const PressLayer& at, const PressOptions& o) {
  require(o.beta >= 1, "press pyramidkv: beta must be >= 1");
  const double q_len = at.prompt_len, w = o.window_size;
  const double mcp = w + q_len * (1 - o.compression_ratio);
  double min_num = (mcp - w) / o.beta;
  double max_num = (mcp - w) * 2 - min_num;
  if (max_num >= q_len - w) {
    max_num = q_len - w;
    min_num = (mcp - w) * 2 - max_num;
  }
  if (!(q_len >= max_num && max_num >= min_num && min_num >= w))
    return std::max(1, static_cast<int>(std::nearbyint(q_len * (1 - o.compression_ratio))));
  const double steps = at.model_layers > 1 ? (max_num - min_num) / (at.model_layers - 1) : 0.0;
  return static_cast<int>(std::nearbyint(max_num - at.model_layer * steps));
}

}  // namespace

std::span<const PressEntry> press_table() { return kPresses; }

const PressEntry& press_entry(PressId id) {
  require(id >= PressId::ObservedAttention && id < PressId::Count, "press id out of range (a kvoracle bug)");
  return kPresses[static_cast<std::size_t>(id)];
}

PressId parse_press(std::string_view name) {
  for (const PressEntry& e : kPresses)
    if (name == e.name || name == e.kvpress_class) return e.id;
  throw Error("unknown press '" + std::string(name) + "' (known: " + known_presses() + ")");
}

std::vector<PressId> parse_press_list(std::string_view names) {
  std::vector<PressId> out;
  if (names == "all") {
    for (const PressEntry& e : kPresses) out.push_back(e.id);
    return out;
  }
  std::size_t start = 0;
  while (start <= names.size()) {
    const std::size_t comma = std::min(names.find(',', start), names.size());
    const std::string_view item = names.substr(start, comma - start);
    require(!item.empty(), "empty press name in '" + std::string(names) + "'");
    const PressId id = parse_press(item);
    require(std::find(out.begin(), out.end(), id) == out.end(), "press '" + std::string(item) + "' listed twice");
    out.push_back(id);
    start = comma + 1;
  }
  require(!out.empty(), "no press named");
  return out;
}

int press_n_kept(int prompt_len, double compression_ratio) {
  if (compression_ratio >= 1.0) return 0;
  return std::max(1, static_cast<int>(prompt_len * (1 - compression_ratio)));
}

PressLayer press_layer_of(const Trace& trace, int layer, int prompt_len) {
  require(layer >= 0 && layer < trace.n_layers, "layer " + std::to_string(layer) + " is not in the trace");
  PressLayer at{&trace, layer, layer, trace.n_layers, prompt_len};
  if (auto it = trace.metadata.find("model_layers"); it != trace.metadata.end() && !it->second.empty()) {
    std::vector<int> listed;
    std::size_t start = 0;
    while (start <= it->second.size()) {
      const std::size_t comma = std::min(it->second.find(',', start), it->second.size());
      try {
        listed.push_back(std::stoi(it->second.substr(start, comma - start)));
      } catch (const std::exception&) {
        throw Error("trace metadata model_layers '" + it->second + "' is not a comma-separated list of layers");
      }
      start = comma + 1;
    }
    require(static_cast<int>(listed.size()) == trace.n_layers,
            "trace metadata model_layers lists " + std::to_string(listed.size()) + " layers, the trace has " +
                std::to_string(trace.n_layers));
    at.model_layer = listed[static_cast<std::size_t>(layer)];
    at.model_layers = *std::max_element(listed.begin(), listed.end()) + 1;
  }
  if (auto it = trace.metadata.find("model_n_layers"); it != trace.metadata.end()) {
    try {
      at.model_layers = std::stoi(it->second);
    } catch (const std::exception&) {
      throw Error("trace metadata model_n_layers '" + it->second + "' is not a number");
    }
  }
  return at;
}

PressResult run_press(const PressLayer& at, const PressOptions& o) {
  const Trace& tr = *at.trace;
  const PressEntry& e = press_entry(o.id);
  const std::string who = "press " + std::string(e.name) + ": ";
  require(o.compression_ratio >= 0 && o.compression_ratio < 1,
          who + "compression_ratio must be in [0, 1) (kvpress's rule), got " + std::to_string(o.compression_ratio));
  require(at.prompt_len >= 1 && at.prompt_len <= tr.n_tokens, who + "the prompt length must be in [1, " +
                                                                  std::to_string(tr.n_tokens) + "], got " +
                                                                  std::to_string(at.prompt_len));
  require(tr.has_qk(at.layer) || tr.has_attention(at.layer),
          who + "layer " + std::to_string(at.layer) + " of the trace holds neither q/k nor attention");
  require(!e.needs_values || tr.has_values(at.layer),
          who + "needs values; layer " + std::to_string(at.layer) + " of the trace has none (record with values)");
  require((o.id != Knorm && o.id != KeyDiff && o.id != LagKV && o.id != CUR && o.id != NonCausalAttention) ||
              tr.has_qk(at.layer),
          who + "reads keys; layer " + std::to_string(at.layer) + " of the trace holds attention only");
  PressResult r;
  r.scores = press_scores::compute(at, o);
  r.n_kept = o.id == PyramidKV ? pyramid_layer_budget(at, o) : press_n_kept(at.prompt_len, o.compression_ratio);
  if (o.compression_ratio == 0) r.n_kept = at.prompt_len;  // kvpress returns the cache untouched
  r.n_kept = std::min(r.n_kept, at.prompt_len);
  for (const auto& s : r.scores) r.kept.push_back(top_k(s, r.n_kept));
  return r;
}

std::vector<float> torch_cpu_rand(std::uint64_t seed, std::size_t count) {
  std::mt19937 engine(static_cast<std::uint32_t>(seed));  // at::mt19937(seed) keeps the low 32 bits
  std::vector<float> out(count);
  for (float& x : out) x = static_cast<float>(static_cast<std::uint32_t>(engine() & 0xFFFFFFu)) * 0x1p-24f;
  return out;
}

}  // namespace kvo
