#include "kvo/model/recorder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include "kvo/core/error.hpp"
#include "kvo/core/field_schema.hpp"
#include "kvo/core/file_sha256.hpp"

namespace kvo::model {
namespace {

// Copies the tapped rows of each recorded layer into the trace's [heads, n, d] tensors.
class TraceTap final : public LayerTap {
 public:
  TraceTap(Trace& tr, const std::vector<int>& layers, int hd) : tr_(tr), hd_(hd), slot_(256, -1) {
    for (size_t s = 0; s < layers.size(); ++s) slot_.at(static_cast<size_t>(layers[s])) = static_cast<int>(s);
  }
  void on_layer(int layer, int first_pos, const MatrixRM& q, const MatrixRM& k, const MatrixRM& v) override {
    const int s = slot_.at(static_cast<size_t>(layer));
    if (s < 0) return;
    scatter(q, tr_.q[s], tr_.n_heads, first_pos);
    scatter(k, tr_.k[s], tr_.n_kv_heads, first_pos);
    scatter(v, tr_.v[s], tr_.n_kv_heads, first_pos);
  }

 private:
  void scatter(const MatrixRM& x, std::vector<float>& dst, int heads, int first_pos) const {
    const size_t n = static_cast<size_t>(tr_.n_tokens);
    for (Eigen::Index t = 0; t < x.rows(); ++t)
      for (int h = 0; h < heads; ++h)
        std::copy_n(x.data() + t * x.cols() + h * hd_, hd_,
                    dst.data() + (static_cast<size_t>(h) * n + static_cast<size_t>(first_pos + t)) * hd_);
  }
  Trace& tr_;
  int hd_;
  std::vector<int> slot_;
};

}  // namespace

void RecordOptions::validate() const {
  require(tokens >= 2, "record: tokens must be >= 2");
  require(chunk >= 1, "record: chunk must be >= 1");
  for (int l : layers) require(l >= 0, "record: layer " + std::to_string(l) + " is not in the model");
  require(prompt_len >= 0 && prompt_len <= tokens, "record: prompt_len must be in [0, tokens]");
}

const Schema<RecordOptions>& RecordOptions::schema() {
  using R = RecordOptions;
  static const Schema<R> schema(
      "record options",
      {member(&R::tokens, {.name = "tokens", .help = "tokens to record (the text's first n)", .alias = "-n"}),
       member(&R::layers, {.name = "layers", .help = "model layers to record, comma-separated (default: all)"}),
       member(&R::prompt_len, {.name = "prompt_len", .help = "prompt length to store in the metadata"}),
       member(&R::chunk, {.name = "chunk", .help = "tokens per forward pass", .cli = false}),
       member(&R::text_source, {.name = "text_source", .help = "what the text was, for the metadata", .cli = false})});
  return schema;
}

nlohmann::json RecordOptions::to_json() const { return schema().to_json(*this); }
RecordOptions RecordOptions::from_json(const nlohmann::json& j) { return schema().from_json(j); }

Trace record_trace(const Llama& model, const std::string& text, const RecordOptions& o) {
  o.validate();
  std::vector<int> ids = model.tokenizer().encode(text);
  require(static_cast<int>(ids.size()) >= o.tokens, "record: the text has " + std::to_string(ids.size()) +
                                                        " tokens, fewer than the " + std::to_string(o.tokens) +
                                                        " asked for");
  ids.resize(static_cast<size_t>(o.tokens));
  return record_trace(model, std::span<const int>(ids), o);
}

struct TraceRecorder::Impl {
  Trace trace;
  std::vector<int> layers;
  std::unique_ptr<TraceTap> tap;
};

TraceRecorder::TraceRecorder(const Llama& model, const RecordOptions& o) : impl_(std::make_unique<Impl>()) {
  const LlamaConfig& c = model.config();
  o.validate();
  require(o.tokens <= c.context, "record: tokens " + std::to_string(o.tokens) + " exceeds the model's context (" +
                                     std::to_string(c.context) + ")");
  std::vector<int>& layers = impl_->layers;
  layers = o.layers;
  if (layers.empty())
    for (int l = 0; l < c.n_layers; ++l) layers.push_back(l);
  for (int l : layers) require(l >= 0 && l < c.n_layers, "record: layer " + std::to_string(l) + " is not in the model");

  Trace& tr = impl_->trace;
  tr.resize_layers(static_cast<int>(layers.size()));
  tr.n_heads = c.n_heads;
  tr.n_kv_heads = c.n_kv_heads;
  tr.n_tokens = o.tokens;
  tr.head_dim = c.head_dim;
  tr.attn_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  tr.prompt_len = o.prompt_len;
  const size_t nd = static_cast<size_t>(o.tokens) * c.head_dim;
  for (size_t s = 0; s < layers.size(); ++s) {
    tr.q[s].assign(nd * c.n_heads, 0.f);
    tr.k[s].assign(nd * c.n_kv_heads, 0.f);
    tr.v[s].assign(nd * c.n_kv_heads, 0.f);
  }
  std::string layer_list;
  for (int l : layers) {
    if (!layer_list.empty()) layer_list += ',';
    layer_list += std::to_string(l);
  }
  tr.metadata = {{"model", c.name},
                 {"model_file", model.path().substr(model.path().find_last_of('/') + 1)},
                 {"model_sha256", file_sha256(model.path())},
                 {"text_source", o.text_source},
                 {"rope_theta", std::to_string(c.rope_theta)},
                 {"rope_layout", "interleaved"},
                 {"model_layers", layer_list},
                 {"recorder", "kvoracle record (full attention, fp32)"}};
  impl_->tap = std::make_unique<TraceTap>(tr, layers, c.head_dim);
}

TraceRecorder::~TraceRecorder() = default;

LayerTap* TraceRecorder::tap() { return impl_->tap.get(); }

Trace TraceRecorder::finish(std::span<const int> ids) {
  Trace tr = std::move(impl_->trace);
  const size_t n_max = static_cast<size_t>(tr.n_tokens), n = ids.size();
  require(n <= n_max && n >= 2,
          "record: " + std::to_string(n) + " token ids for a trace of at most " + std::to_string(n_max) + " positions");
  if (n < n_max) {  // [heads, n_max, d] -> [heads, n, d], head by head (each moves to a lower offset)
    const size_t d = static_cast<size_t>(tr.head_dim);
    auto cut = [&](std::vector<float>& x, int heads) {
      for (size_t h = 0; h < static_cast<size_t>(heads); ++h)
        std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(h * n_max * d), n * d,
                    x.begin() + static_cast<std::ptrdiff_t>(h * n * d));
      x.resize(static_cast<size_t>(heads) * n * d);
    };
    for (size_t s = 0; s < tr.q.size(); ++s) {
      cut(tr.q[s], tr.n_heads);
      cut(tr.k[s], tr.n_kv_heads);
      cut(tr.v[s], tr.n_kv_heads);
    }
    tr.n_tokens = static_cast<int>(n);
    tr.prompt_len = std::min(tr.prompt_len, tr.n_tokens);
  }
  tr.tokens.assign(ids.begin(), ids.end());
  tr.validate();
  return tr;
}

Trace record_trace(const Llama& model, std::span<const int> ids, const RecordOptions& o) {
  o.validate();
  require(static_cast<int>(ids.size()) == o.tokens,
          "record: " + std::to_string(ids.size()) + " token ids given, " + std::to_string(o.tokens) + " asked for");
  TraceRecorder rec(model, o);
  KvCache cache = model.new_cache(o.tokens);
  for (int start = 0; start < o.tokens; start += o.chunk) {
    const int n = std::min(o.chunk, o.tokens - start);
    model.forward(std::span<const int>(ids.data() + start, static_cast<size_t>(n)), cache, false, rec.tap());
    if (o.progress) o.progress(start + n, o.tokens);
  }
  return rec.finish(ids);
}

}  // namespace kvo::model
