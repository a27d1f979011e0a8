// Seeded synthetic heavy-hitter traces: Zipf-distributed key importance, attention sinks and a
// recency bias built into q and k, so that replay and checks can run without a model.
// Bit-identical across platforms (own Gaussian sampler on std::mt19937_64).
#pragma once
#include <cstdint>

#include "kvo/core/trace.hpp"

namespace kvo {

struct SynthOptions {
  int layers = 2;
  int heads = 4;
  int kv_heads = 2;
  int tokens = 256;
  int head_dim = 32;
  int prompt_len = 64;
  int sinks = 2;            // tokens with a large importance at the start
  double zipf = 1.1;        // exponent of the importance ranks
  double importance = 4.0;  // logit of the most important non-sink token
  double recency = 2.0;     // logit boost of the query's own position
  double noise = 1.0;       // standard deviation of the random part of the logits
  std::uint64_t seed = 0;
};

Trace synthesize(const SynthOptions& options);

}  // namespace kvo
