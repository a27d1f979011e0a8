// Small traces with exact ties placed on purpose, for the conformance kit's golden files: a
// dense-attention trace whose token pairs (b - 1, b) every later query weighs identically (the
// policies' scores), and a q, k, v trace whose keys repeat exactly (the presses' scores).
#pragma once
#include <cstdint>
#include <vector>

#include "kvo/core/trace.hpp"

namespace kvo::conformance {

struct TieTraceOptions {
  int layers = 2;
  int heads = 4;
  int kv_heads = 2;
  int tokens = 40;
  int prompt_len = 0;
  int pair_every = 5;  // b = pair_every, 2 pair_every, ...: tokens b - 1 and b tie
  std::uint64_t seed = 0;
};

// Row i weighs token j by a seeded integer in 2..5 over the row's sum; the tokens of every tied pair
// (b - 1, b) weigh 1 in rows i >= b, and row b - 1 gives token b - 1 nothing. kvo::Error naming the
// option for sizes below 1, heads not a multiple of kv_heads, pair_every below 2 or a prompt
// outside [0, tokens].
Trace tie_trace(const TieTraceOptions& options);

// The tied pairs' later tokens b (ascending), for a trace of `tokens` tokens.
std::vector<int> tied_pairs(const TieTraceOptions& options);

struct PressTraceOptions {
  int layers = 2;
  int heads = 4;
  int kv_heads = 2;
  int tokens = 32;  // all of them the prompt, which a press cuts once at its last token
  int head_dim = 8;
  int heavy_every = 7;  // one heavy key in every heavy_every positions
  std::uint64_t seed = 0;
};

// Post-RoPE q, k and v (attn_scale 1 / sqrt(head_dim)) in which every key of a KV head is one
// background vector, except its heavy keys: that vector plus a distinct multiple of the direction
// every query leans along (query dimension 0 is fixed, key dimension 0 is 0 in the background).
// Identical keys get identical logits from every query, so every key-derived score (attention of a
// window, pooled; key norms; similarities) ties exactly among background keys whose neighbourhood
// holds no heavy key, and a cut through them is decided by the tie rule. Heavy keys sit at
// offset + m heavy_every, the offset differing per (layer, KV head) so that no unit's decisions
// are another's. kvo::Error naming the option for sizes below 1 (tokens below 2, head_dim below 2),
// heads not a multiple of kv_heads or heavy_every below 2.
Trace press_tie_trace(const PressTraceOptions& options);

// The heavy keys of (layer, KV head) of that trace, ascending.
std::vector<int> heavy_keys(const PressTraceOptions& options, int layer, int kv_head);

}  // namespace kvo::conformance
