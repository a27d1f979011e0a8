// The table of kvpress's prefill presses (kvo/core/press.hpp), apart from the policies' since a
// press scores a whole layer's prompt once rather than evicting step by step: per press kvpress's
// registry key and class, what its score is, the parameters it reads and what of the trace it needs.
#include <array>

#include "kvo/core/press.hpp"
#include "kvo/core/registry.hpp"

namespace kvo {
namespace {

// Each row names its fields; needs_keys and needs_values default to false.
constexpr std::array<PressEntry, kPressCount> kPressRows = {{
    {.id = PressId::ObservedAttention,
     .name = "observed_attention",
     .kvpress_class = "ObservedAttentionPress",
     .score = "attention a key received from the prompt's queries / the number of queries that saw it, mean over the "
              "KV head's query group (H2O's accumulated score, normalised)",
     .reads = "",
     .queries = PressQueries::All},
    {.id = PressId::Tova,
     .name = "tova",
     .kvpress_class = "TOVAPress",
     .score = "the last prompt query's attention, mean over every query head of the layer (one set for all KV heads); "
              "the last token forced",
     .reads = "",
     .queries = PressQueries::Last},
    {.id = PressId::SnapKV,
     .name = "snapkv",
     .kvpress_class = "SnapKVPress",
     .score = "attention of the last window_size queries (mean), average-pooled over kernel_size keys, mean over the "
              "group; the window forced",
     .reads = "window_size, kernel_size",
     .queries = PressQueries::Window},
    {.id = PressId::PyramidKV,
     .name = "pyramidkv",
     .kvpress_class = "PyramidKVPress",
     .score = "SnapKV's score with a per-layer budget falling linearly from the first layer to the last (beta)",
     .reads = "window_size, kernel_size, beta",
     .queries = PressQueries::Window},
    {.id = PressId::Knorm,
     .name = "knorm",
     .kvpress_class = "KnormPress",
     .score = "minus the key's L2 norm",
     .reads = "",
     .needs_keys = true,
     .queries = PressQueries::None},
    {.id = PressId::KeyDiff,
     .name = "keydiff",
     .kvpress_class = "KeyDiffPress",
     .score = "minus the cosine similarity of the key to the mean normalised key",
     .reads = "",
     .needs_keys = true,
     .queries = PressQueries::None},
    {.id = PressId::StreamingLLM,
     .name = "streaming_llm",
     .kvpress_class = "StreamingLLMPress",
     .score = "the first n_sink tokens and the most recent ones",
     .reads = "n_sink",
     .queries = PressQueries::None},
    {.id = PressId::LagKV,
     .name = "lagkv",
     .kvpress_class = "LagKVPress",
     .score = "rank within its lag_size partition of the spread (std) of its key and value, min-max normalised by the "
              "next partition; sinks and the last partitions forced",
     .reads = "n_sink, lag_size",
     .needs_keys = true,
     .needs_values = true,
     .queries = PressQueries::None},
    {.id = PressId::CUR,
     .name = "cur",
     .kvpress_class = "CURPress",
     .score = "|k|^2 |v|^2, each normalised within local windows (CurDKV's local leverage approximation); sinks forced",
     .reads = "n_sink (num_sinks), local_window_size",
     .needs_keys = true,
     .needs_values = true,
     .queries = PressQueries::None},
    {.id = PressId::NonCausalAttention,
     .name = "non_causal_attn",
     .kvpress_class = "NonCausalAttnPress",
     .score =
         "column sums of a non-causal attention within chunk_size tiles (unscaled q.k), mean over the group, times "
         "|v|, pooled over 3 keys, z-scored",
     .reads = "chunk_size",
     .needs_keys = true,
     .needs_values = true,
     .queries = PressQueries::All},
    {.id = PressId::Random,
     .name = "random",
     .kvpress_class = "RandomPress",
     .score = "torch.rand with torch.manual_seed(seed) on the CPU",
     .reads = "seed",
     .queries = PressQueries::None},
}};

constexpr Registry<PressEntry, kPressCount> kPresses{kPressRows, "press", "presses", &PressEntry::kvpress_class,
                                                     kPressPrefix};
static_assert(kPresses.complete(), "the press table needs one entry per PressId, in order, with a unique name");

}  // namespace

std::string press_names_joined() { return kPresses.names(); }

std::span<const PressEntry> press_table() { return kPresses.all(); }

const PressEntry& press_entry(PressId id) { return kPresses[id]; }

std::optional<PressId> find_press(std::string_view name) {
  if (const PressEntry* e = kPresses.find(name)) return e->id;
  return std::nullopt;
}

// The qualified spelling of every command (policy_press.hpp): "press:tova" is kvpress's TOVAPress.
PressId parse_press(std::string_view name) { return kPresses.parse(name).id; }

std::vector<PressId> parse_press_list(std::string_view names) {
  return kPresses.parse_list(names, {.all = true, .repeated = RepeatedName::Refuse});
}

}  // namespace kvo
