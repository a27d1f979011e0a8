// Records an attention trace by running the model over a text with full attention: per layer
// post-RoPE q [H, n, d], k and v [H_kv, n, d], token ids and provenance metadata.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "kvo/core/field_schema.hpp"
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

  // kvo::Error naming the option: tokens below 2, chunk below 1, a negative layer, prompt_len
  // outside [0, tokens]. (The model's context and layer count are checked by record_trace.)
  void validate() const;
  static const Schema<RecordOptions>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;                // every field but the hook
  static RecordOptions from_json(const nlohmann::json& j);
};

Trace record_trace(const Llama& model, const std::string& text, const RecordOptions& options);
// The same over token ids (exactly options.tokens of them).
Trace record_trace(const Llama& model, std::span<const int> ids, const RecordOptions& options);

// Records a trace alongside forward calls someone else makes (a chunked prefill, then a greedy
// answer token by token): pass tap() to every Llama::forward from position 0 on, then finish()
// with the ids run. options.tokens is the most positions the calls will reach (the trace is cut
// to the ids given); options.chunk and progress are not used.
class TraceRecorder {
 public:
  TraceRecorder(const Llama& model, const RecordOptions& options);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;
  LayerTap* tap();
  // The trace of positions 0 .. ids.size() - 1 (kvo::Error for more ids than options.tokens).
  Trace finish(std::span<const int> ids);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvo::model
