// kvpress's prefill presses (NVIDIA kvpress 0.5.5) on a trace's prompt: each press's score per KV
// head and prompt token, computed from the trace's q, k and v with kvpress's exact semantics (head
// averaging, windows, forced tokens, its count rule), and the kept set it implies. One table of
// presses, like the policy table; docs/presses.md lists them and those left out.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/core/trace.hpp"

namespace kvo {

enum class PressId : int {
  ObservedAttention,
  Tova,
  SnapKV,
  PyramidKV,
  Knorm,
  KeyDiff,
  StreamingLLM,
  LagKV,
  CUR,
  NonCausalAttention,
  Random,
  Count
};
inline constexpr std::size_t kPressCount = static_cast<std::size_t>(PressId::Count);

// Which prompt queries a press's score reads: none (keys, values or positions only), the last
// one, the last window_size, or every one. A caller that holds only the last m queries (kvpress's
// DecodingPress buffer) can score a press that reads at most m (press_queries_read).
enum class PressQueries { None, Last, Window, All };

struct PressEntry {
  PressId id;
  std::string_view name;           // kvpress's evaluation registry key ("snapkv", "observed_attention")
  std::string_view kvpress_class;  // the class in kvpress ("SnapKVPress")
  std::string_view score;          // what the score is, in one line (docs/presses.md)
  std::string_view reads;          // the parameters of PressOptions it reads
  bool needs_keys = false;         // reads k itself, not only attention (a dense-attention trace cannot serve it)
  bool needs_values = false;       // reads v (LagKV, CUR, NonCausalAttn)
  PressQueries queries = PressQueries::None;  // which prompt queries the score reads
};

// A press and its parameters, with kvpress's defaults and names.
struct PressOptions {
  PressId id = PressId::SnapKV;
  double compression_ratio = 0.5;  // the fraction of prompt keys removed, in [0, 1)
  int window_size = 64;            // snapkv, pyramidkv: the last queries scored and kept
  int kernel_size = 5;             // snapkv, pyramidkv: average pooling of the scores
  int beta = 20;                   // pyramidkv: the pyramid's steepness
  int n_sink = 4;                  // streaming_llm, lagkv, cur (num_sinks): first tokens kept
  int lag_size = 128;              // lagkv: partition length
  int local_window_size = 16;      // cur: the local normalisation window
  int chunk_size = 256;            // non_causal_attn: the tiles of the non-causal attention
  std::uint64_t seed = 0;          // random: torch.manual_seed of kvpress's RandomPress(seed=...)
};

std::span<const PressEntry> press_table();
const PressEntry& press_entry(PressId id);
inline std::string press_name(PressId id) { return std::string(press_entry(id).name); }
// The qualified spelling of a press, in every command: "press:tova" is kvpress's TOVAPress, where
// the bare "tova" also names a kvoracle policy (kvo/core/policy_press.hpp).
inline constexpr std::string_view kPressPrefix = "press:";
// kvo::Error "unknown press 'x' (known: ...)" for a name that is neither a registry key nor a class.
std::optional<PressId> find_press(std::string_view name);       // by registry key or kvpress class
PressId parse_press(std::string_view name);                     // also "press:NAME"
std::string press_names_joined();                               // "observed_attention, tova, ..." for messages
std::vector<PressId> parse_press_list(std::string_view names);  // "snapkv,tova"; "all": every press

// How many of the last prompt queries the press's score reads on a prompt of P tokens (0: none;
// P: all); the queries before them may be anything.
int press_queries_read(const PressOptions& options, int prompt_len);

// kvpress's compute_n_kept: max(1, int(P * (1 - compression_ratio))).
int press_n_kept(int prompt_len, double compression_ratio);

// Where a press's prompt comes from: one layer of a trace, rows < prompt_len.
struct PressLayer {
  const Trace* trace = nullptr;
  int layer = 0;        // trace layer
  int model_layer = 0;  // the model's layer index (pyramidkv's budget), from the trace's model_layers
  int model_layers = 0;
  int prompt_len = 0;
};
// PressLayer of a trace layer; model_layer(s) from the metadata `model_layers` when present.
PressLayer press_layer_of(const Trace& trace, int layer, int prompt_len);

struct PressResult {
  int n_kept = 0;                           // per KV head of this layer
  std::vector<std::vector<double>> scores;  // [H_kv][P]: higher is kept
  std::vector<std::vector<int>> kept;       // [H_kv]: n_kept positions, ascending
};

// Scores and kept sets of one layer. Top-k ties keep the earlier position (kvpress leaves them
// to torch.topk's unspecified order). kvo::Error for a prompt the press refuses (SnapKV: P must
// exceed window_size; StreamingLLM: P must exceed n_sink) or a trace lacking what it reads.
PressResult run_press(const PressLayer& layer, const PressOptions& options);

// The uniform floats torch.rand(shape, generator) draws on the CPU after manual_seed(seed):
// mt19937 words masked to 24 bits, times 2^-24 (kvpress's RandomPress, float32 keys).
std::vector<float> torch_cpu_rand(std::uint64_t seed, std::size_t count);

}  // namespace kvo
