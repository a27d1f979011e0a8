// Seeded synthetic heavy-hitter traces: Zipf-distributed key importance, attention sinks and a
// recency bias built into q and k, so that replay and checks can run without a model.
// Bit-identical across platforms (own Gaussian sampler on std::mt19937_64).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "kvo/core/field_schema.hpp"
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

// kvo::Error naming the option: sizes below 1 (tokens below 2), heads not a multiple of kv_heads,
// head_dim below 10, prompt_len or sinks outside [0, tokens]. The trace's metadata "model" is
// kSyntheticModel; its token ids are seeded random ids, not text.
Trace synthesize(const SynthOptions& options);
inline constexpr std::string_view kSyntheticModel = "synthetic-heavy-hitter";
// Empty when the trace's token ids are text (n ids, not a synthetic trace's random ones), so that
// checks about words (E3) can read them; otherwise why not, in one line.
std::string trace_text_missing(const Trace& trace);

// The one declaration of synth's options: name (Python keyword, JSON key), the CLI's flag, help.
const Schema<SynthOptions>& synth_options_schema();

}  // namespace kvo
