// A small dense-attention trace with exact ties placed on purpose, for the conformance kit's golden
// files: token pairs (b - 1, b) that every later query weighs identically, so that every per-token
// score (accumulated, last, marks) of the two is bit for bit equal and the tie rule decides.
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

}  // namespace kvo::conformance
