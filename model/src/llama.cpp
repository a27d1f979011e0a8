#include "kvo/model/llama.hpp"

#include <cmath>

#include "kvo/core/error.hpp"
#include "kvo/core/memory_limit.hpp"
#include "kvo/model/gguf.hpp"

namespace kvo::model {

struct Llama::Layer {
  Eigen::VectorXf attn_norm, ffn_norm;
  MatrixRM wq, wk, wv, wo, gate, up, down;  // [out, in]
};

namespace {

// A NaN or Inf weight is reported with its tensor, row and column.
void require_finite(const std::vector<float>& v, const std::string& name, size_t cols) {
  for (size_t x = 0; x < v.size(); ++x)
    if (!std::isfinite(v[x]))
      throw Error(std::string(std::isnan(v[x]) ? "NaN" : "Inf") + " in model tensor '" + name + "' at row " +
                  std::to_string(x / cols) + ", column " + std::to_string(x % cols));
}

MatrixRM load_matrix(const GgufFile& f, const std::string& name, int rows, int cols) {
  const GgufTensor& t = f.tensor(name);
  require(t.dims.size() == 2 && t.dims[0] == static_cast<std::uint64_t>(cols) &&
              t.dims[1] == static_cast<std::uint64_t>(rows),
          "tensor '" + name + "' has shape [" + std::to_string(t.dims[0]) + ", " +
              std::to_string(t.dims.size() > 1 ? t.dims[1] : 1) + "], expected [" + std::to_string(cols) + ", " +
              std::to_string(rows) + "]");
  const std::vector<float> v = f.dequantize(t);
  require_finite(v, name, static_cast<size_t>(cols));
  return Eigen::Map<const MatrixRM>(v.data(), rows, cols);
}

Eigen::VectorXf load_vector(const GgufFile& f, const std::string& name, int n) {
  const GgufTensor& t = f.tensor(name);
  require(t.numel() == static_cast<std::uint64_t>(n), "tensor '" + name + "' has the wrong length");
  const std::vector<float> v = f.dequantize(t);
  require_finite(v, name, v.size());
  return Eigen::Map<const Eigen::VectorXf>(v.data(), n);
}

void rms_norm(const MatrixRM& x, const Eigen::VectorXf& w, double eps, MatrixRM& out) {
  out.resize(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const float ms = x.row(r).squaredNorm() / static_cast<float>(x.cols());
    const float s = 1.0f / std::sqrt(ms + static_cast<float>(eps));
    out.row(r) = (x.row(r) * s).cwiseProduct(w.transpose());
  }
}

// Rotates adjacent pairs (2i, 2i+1) of every head by pos * theta^(-2i/hd).
void rope(MatrixRM& x, int heads, int hd, int first_pos, double theta) {
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const double pos = first_pos + static_cast<double>(r);
    for (int i = 0; i < hd / 2; ++i) {
      const double ang = pos * std::pow(theta, -2.0 * i / hd);
      const float c = static_cast<float>(std::cos(ang)), s = static_cast<float>(std::sin(ang));
      for (int h = 0; h < heads; ++h) {
        float* p = x.data() + r * x.cols() + h * hd + 2 * i;
        const float a = p[0], b = p[1];
        p[0] = a * c - b * s;
        p[1] = a * s + b * c;
      }
    }
  }
}

}  // namespace

size_t KvCache::bytes() const {
  size_t b = 0;
  for (const auto& m : k) b += static_cast<size_t>(m.size()) * sizeof(float);
  for (const auto& m : v) b += static_cast<size_t>(m.size()) * sizeof(float);
  return b;
}

Llama::~Llama() = default;

Llama::Llama(const std::string& path) : path_(path) {
  const GgufFile f(path);
  std::uint64_t values = 0;  // every weight is held dequantised to fp32
  for (const auto& t : f.tensors()) values += t.numel();
  require_memory(values * 4, "model '" + path + "' (weights dequantised to fp32)");
  const std::string arch = f.get_string("general.architecture");
  require(arch == "llama", "'" + path + "' holds a '" + arch + "' model; kvoracle runs llama");
  cfg_.name = f.metadata().value("general.name", std::string("llama"));
  cfg_.n_layers = static_cast<int>(f.get_uint("llama.block_count"));
  cfg_.d_model = static_cast<int>(f.get_uint("llama.embedding_length"));
  cfg_.n_heads = static_cast<int>(f.get_uint("llama.attention.head_count"));
  cfg_.n_kv_heads = static_cast<int>(f.get_uint("llama.attention.head_count_kv"));
  cfg_.d_ff = static_cast<int>(f.get_uint("llama.feed_forward_length"));
  cfg_.context = static_cast<int>(f.get_uint("llama.context_length"));
  cfg_.rope_theta = f.get_float("llama.rope.freq_base");
  cfg_.rms_eps = f.get_float("llama.attention.layer_norm_rms_epsilon");
  require(cfg_.n_heads > 0 && cfg_.n_kv_heads > 0 && cfg_.n_heads % cfg_.n_kv_heads == 0 &&
              cfg_.d_model % cfg_.n_heads == 0,
          "'" + path + "': inconsistent head counts");
  cfg_.head_dim = cfg_.d_model / cfg_.n_heads;
  tok_ = std::make_unique<Tokenizer>(f);
  cfg_.vocab = tok_->vocab_size();
  const int d = cfg_.d_model, kvd = cfg_.n_kv_heads * cfg_.head_dim;
  embed_ = load_matrix(f, "token_embd.weight", cfg_.vocab, d);
  require(!f.has_tensor("output.weight"),
          "'" + path + "' has a separate output matrix; kvoracle expects tied embeddings");
  out_norm_ = load_vector(f, "output_norm.weight", d);
  layers_.resize(static_cast<size_t>(cfg_.n_layers));
  for (int l = 0; l < cfg_.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    Layer& L = layers_[static_cast<size_t>(l)];
    L.attn_norm = load_vector(f, p + "attn_norm.weight", d);
    L.ffn_norm = load_vector(f, p + "ffn_norm.weight", d);
    L.wq = load_matrix(f, p + "attn_q.weight", d, d);
    L.wk = load_matrix(f, p + "attn_k.weight", kvd, d);
    L.wv = load_matrix(f, p + "attn_v.weight", kvd, d);
    L.wo = load_matrix(f, p + "attn_output.weight", d, d);
    L.gate = load_matrix(f, p + "ffn_gate.weight", cfg_.d_ff, d);
    L.up = load_matrix(f, p + "ffn_up.weight", cfg_.d_ff, d);
    L.down = load_matrix(f, p + "ffn_down.weight", d, cfg_.d_ff);
  }
}

KvCache Llama::new_cache(int capacity) const {
  KvCache c;
  c.capacity = capacity;
  const int kvd = cfg_.n_kv_heads * cfg_.head_dim;
  c.k.assign(static_cast<size_t>(cfg_.n_layers), MatrixRM(capacity, kvd));
  c.v.assign(static_cast<size_t>(cfg_.n_layers), MatrixRM(capacity, kvd));
  return c;
}

MatrixRM Llama::forward(std::span<const int> tokens, KvCache& cache, bool want_logits, LayerTap* tap) const {
  const int T = static_cast<int>(tokens.size()), d = cfg_.d_model, hd = cfg_.head_dim;
  const int H = cfg_.n_heads, G = cfg_.n_heads / cfg_.n_kv_heads;
  const int pos0 = cache.length;
  require(pos0 + T <= cache.capacity, "KV cache capacity " + std::to_string(cache.capacity) + " exceeded");
  require(cache.start.empty() || static_cast<int>(cache.start.size()) == cfg_.n_layers * cfg_.n_kv_heads,
          "KV cache: start rows must be given for every (layer, KV head) or none");
  for (int first : cache.start) require(first >= 0 && first <= pos0, "KV cache: a KV head starts outside its rows");
  MatrixRM x(T, d);
  for (int t = 0; t < T; ++t) {
    require(tokens[t] >= 0 && tokens[t] < cfg_.vocab,
            "token id " + std::to_string(tokens[t]) + " is outside the vocabulary");
    x.row(t) = embed_.row(tokens[t]);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  MatrixRM h, q, k, v, att(T, d), g, u;
  for (int l = 0; l < cfg_.n_layers; ++l) {
    const Layer& L = layers_[static_cast<size_t>(l)];
    project_qkv(L, x, pos0 + cache.position_shift, h, q, k, v);
    if (tap) tap->on_layer(l, pos0 + cache.position_shift, q, k, v);
    cache.k[static_cast<size_t>(l)].middleRows(pos0, T) = k;
    cache.v[static_cast<size_t>(l)].middleRows(pos0, T) = v;
#pragma omp parallel for schedule(static)
    for (int hh = 0; hh < H; ++hh) {
      const int kvh = hh / G;
      const int first = cache.start.empty() ? 0 : cache.start[static_cast<size_t>(l * cfg_.n_kv_heads + kvh)];
      const int len = pos0 + T - first;  // rows read: first .. pos0 + T - 1
      const auto K = cache.k[static_cast<size_t>(l)].block(first, kvh * hd, len, hd);
      const auto V = cache.v[static_cast<size_t>(l)].block(first, kvh * hd, len, hd);
      MatrixRM s = (q.block(0, hh * hd, T, hd) * K.transpose()) * scale;  // [T, len]
      for (int t = 0; t < T; ++t) {
        const int visible = pos0 - first + t + 1;  // causal
        auto row = s.row(t).head(visible);
        const float m = row.maxCoeff();
        row = (row.array() - m).exp();
        row /= row.sum();
        if (visible < len) s.row(t).tail(len - visible).setZero();
      }
      att.block(0, hh * hd, T, hd).noalias() = s * V;
    }
    add_output_and_mlp(L, att, x, h, g, u);
  }
  cache.length = pos0 + T;
  if (!want_logits) return {};
  rms_norm(x, out_norm_, cfg_.rms_eps, h);
  MatrixRM logits = h * embed_.transpose();
  return logits;
}

void Llama::project_qkv(const Layer& L, const MatrixRM& x, int pos0, MatrixRM& h, MatrixRM& q, MatrixRM& k,
                        MatrixRM& v) const {
  rms_norm(x, L.attn_norm, cfg_.rms_eps, h);
  q.noalias() = h * L.wq.transpose();
  k.noalias() = h * L.wk.transpose();
  v.noalias() = h * L.wv.transpose();
  rope(q, cfg_.n_heads, cfg_.head_dim, pos0, cfg_.rope_theta);
  rope(k, cfg_.n_kv_heads, cfg_.head_dim, pos0, cfg_.rope_theta);
}

void Llama::add_output_and_mlp(const Layer& L, const MatrixRM& att, MatrixRM& x, MatrixRM& h, MatrixRM& g,
                               MatrixRM& u) const {
  x.noalias() += att * L.wo.transpose();
  rms_norm(x, L.ffn_norm, cfg_.rms_eps, h);
  g.noalias() = h * L.gate.transpose();
  u.noalias() = h * L.up.transpose();
  g = (g.array() / (1.0f + (-g.array()).exp())) * u.array();  // SwiGLU: silu(gate) * up
  x.noalias() += g * L.down.transpose();
}

Eigen::RowVectorXf Llama::decode_step(int token, int pos, StepAttention& attention) const {
  require(token >= 0 && token < cfg_.vocab, "token id " + std::to_string(token) + " is outside the vocabulary");
  const int d = cfg_.d_model;
  MatrixRM x = embed_.row(token), h, q, k, v, g, u;
  for (int l = 0; l < cfg_.n_layers; ++l) {
    const Layer& L = layers_[static_cast<size_t>(l)];
    project_qkv(L, x, pos, h, q, k, v);
    const MatrixRM att = attention.attend(l, pos, q.row(0), k.row(0), v.row(0));
    require(att.size() == d,
            "StepAttention returned " + std::to_string(att.size()) + " values, expected " + std::to_string(d));
    add_output_and_mlp(L, att, x, h, g, u);
  }
  rms_norm(x, out_norm_, cfg_.rms_eps, h);
  return h * embed_.transpose();
}

MatrixRM Llama::forward_layered(std::span<const int> tokens, int pos0, LayerAttention& attention,
                                bool all_logits) const {
  const int T = static_cast<int>(tokens.size()), d = cfg_.d_model;
  require(T >= 1, "forward_layered: no tokens");
  MatrixRM x(T, d);
  for (int t = 0; t < T; ++t) {
    require(tokens[t] >= 0 && tokens[t] < cfg_.vocab,
            "token id " + std::to_string(tokens[t]) + " is outside the vocabulary");
    x.row(t) = embed_.row(tokens[t]);
  }
  MatrixRM h, q, k, v, g, u, att(T, d);
  for (int l = 0; l < cfg_.n_layers; ++l) {
    const Layer& L = layers_[static_cast<size_t>(l)];
    project_qkv(L, x, pos0, h, q, k, v);
    attention.attend_layer(l, pos0, q, k, v, att);
    require(att.rows() == T && att.cols() == d, "LayerAttention wrote an output of the wrong shape");
    add_output_and_mlp(L, att, x, h, g, u);
  }
  if (!all_logits) {
    const MatrixRM last = x.bottomRows(1);
    x = last;
  }
  rms_norm(x, out_norm_, cfg_.rms_eps, h);
  return h * embed_.transpose();
}

double mean_nll(const Llama& model, std::span<const int> tokens, int chunk) {
  require(tokens.size() >= 2, "perplexity needs at least two tokens");
  KvCache cache = model.new_cache(static_cast<int>(tokens.size()));
  double nll = 0.0;
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(chunk)) {
    const size_t n = std::min(static_cast<size_t>(chunk), tokens.size() - start);
    const MatrixRM logits = model.forward(tokens.subspan(start, n), cache, true);
    for (size_t t = 0; t < n; ++t) {
      const size_t next = start + t + 1;
      if (next >= tokens.size()) break;
      const auto row = logits.row(static_cast<Eigen::Index>(t)).cast<double>();
      const double m = row.maxCoeff();
      const double lse = m + std::log((row.array() - m).exp().sum());
      nll += lse - row(tokens[next]);
    }
  }
  return nll / static_cast<double>(tokens.size() - 1);
}

}  // namespace kvo::model
