// Records an attention trace by running the model over a text with full attention: per layer
// post-RoPE q [H, n, d], k and v [H_kv, n, d], token ids and provenance metadata.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kvo/core/trace.hpp"
#include "kvo/model/llama.hpp"

namespace kvo::model {

struct RecordOptions {
  int tokens = 1024;        // n (the text is truncated; kvo::Error when it is shorter)
  std::vector<int> layers;  // empty: all layers
  int prompt_len = 0;       // recorded in the metadata
  int chunk = 256;          // tokens per forward call
  std::string text_source;  // recorded in the metadata
  std::function<void(int done, int total)> progress;
};

Trace record_trace(const Llama& model, const std::string& text, const RecordOptions& options);

}  // namespace kvo::model
