#include "kvo/core/press.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>

#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"
#include "press_scores.hpp"

namespace kvo {
namespace {

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

int press_queries_read(const PressOptions& o, int prompt_len) {
  switch (press_entry(o.id).queries) {
    case PressQueries::None:
      return 0;
    case PressQueries::Last:
      return std::min(1, prompt_len);
    case PressQueries::Window:
      return std::clamp(o.window_size, 0, prompt_len);
    case PressQueries::All:
      break;
  }
  return prompt_len;
}

int press_n_kept(int prompt_len, double compression_ratio) {
  if (compression_ratio >= 1.0) return 0;
  return std::max(1, static_cast<int>(prompt_len * (1 - compression_ratio)));
}

PressLayer press_layer_of(const Trace& trace, int layer, int prompt_len) {
  require(layer >= 0 && layer < trace.n_layers, "layer " + std::to_string(layer) + " is not in the trace");
  PressLayer at{&trace, layer, layer, trace.n_layers, prompt_len};
  if (auto it = trace.metadata.find("model_layers"); it != trace.metadata.end() && !it->second.empty()) {
    const std::vector<int> listed = parse_int_list(it->second, "trace metadata model_layers");
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
  require(!e.needs_keys || tr.has_qk(at.layer),
          who + "reads keys; layer " + std::to_string(at.layer) + " of the trace holds attention only");
  PressResult r;
  r.scores = press_scores::compute(at, o);
  r.n_kept =
      o.id == PressId::PyramidKV ? pyramid_layer_budget(at, o) : press_n_kept(at.prompt_len, o.compression_ratio);
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
