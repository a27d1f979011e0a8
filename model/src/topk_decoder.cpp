#include "kvo/model/topk_decoder.hpp"

#include <algorithm>
#include <cmath>

#include "kvo/core/error.hpp"

namespace kvo::model {

TopKDecoder::TopKDecoder(const Llama& model, int k, int capacity)
    : model_(model),
      k_(k),
      capacity_(capacity),
      n_kv_(model.config().n_kv_heads),
      hd_(model.config().head_dim),
      group_(model.config().n_heads / model.config().n_kv_heads) {
  require(k >= 1, "top-k attention: k must be >= 1");
  require(capacity >= 1, "top-k attention: capacity must be >= 1");
  const int width = n_kv_ * hd_;
  keys_.assign(static_cast<size_t>(model.config().n_layers), MatrixRM(capacity, width));
  values_.assign(static_cast<size_t>(model.config().n_layers), MatrixRM(capacity, width));
}

void TopKDecoder::store(int layer, int pos, const float* k, const float* v) {
  require(pos < capacity_, "top-k attention: capacity " + std::to_string(capacity_) + " exceeded");
  const int width = n_kv_ * hd_;
  keys_[static_cast<size_t>(layer)].row(pos) = Eigen::Map<const Eigen::RowVectorXf>(k, width);
  values_[static_cast<size_t>(layer)].row(pos) = Eigen::Map<const Eigen::RowVectorXf>(v, width);
}

void TopKDecoder::attend_row(int layer, int kv, int pos, const float* q, float* out, std::vector<float>& logits,
                             std::vector<float>& mean, std::vector<int>& order) const {
  const int len = pos + 1, m = std::min(k_, len);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd_));
  const auto K = keys_[static_cast<size_t>(layer)].block(0, kv * hd_, len, hd_);
  const auto V = values_[static_cast<size_t>(layer)].block(0, kv * hd_, len, hd_);
  logits.resize(static_cast<size_t>(group_) * len);
  mean.assign(static_cast<size_t>(len), 0.0f);
  std::vector<float> top(static_cast<size_t>(group_));
  for (int g = 0; g < group_; ++g) {
    const int h = kv * group_ + g;
    Eigen::Map<Eigen::VectorXf> s(logits.data() + static_cast<size_t>(g) * len, len);
    s.noalias() = (K * Eigen::Map<const Eigen::VectorXf>(q + h * hd_, hd_)) * scale;
    const float mx = s.maxCoeff();
    top[static_cast<size_t>(g)] = mx;
    const Eigen::ArrayXf e = (s.array() - mx).exp();
    const float z = e.sum();
    Eigen::Map<Eigen::ArrayXf>(mean.data(), len) += e / (z * static_cast<float>(group_));
  }
  order.resize(static_cast<size_t>(len));
  for (int j = 0; j < len; ++j) order[static_cast<size_t>(j)] = j;
  auto heavier = [&](int a, int b) {
    const float x = mean[static_cast<size_t>(a)], y = mean[static_cast<size_t>(b)];
    return x != y ? x > y : a < b;
  };
  if (m < len) std::nth_element(order.begin(), order.begin() + (m - 1), order.end(), heavier);
  order.resize(static_cast<size_t>(m));
  std::sort(order.begin(), order.end());
  for (int g = 0; g < group_; ++g) {
    const int h = kv * group_ + g;
    const float* s = logits.data() + static_cast<size_t>(g) * len;
    float mx = -INFINITY;
    for (int j : order) mx = std::max(mx, s[j]);
    Eigen::Map<Eigen::RowVectorXf> o(out + h * hd_, hd_);
    o.setZero();
    float z = 0.0f;
    for (int j : order) {
      const float w = std::exp(s[j] - mx);
      z += w;
      o += w * V.row(j);
    }
    o /= z;
  }
}

Eigen::RowVectorXf TopKDecoder::attend(int layer, int pos, const Eigen::RowVectorXf& q, const Eigen::RowVectorXf& k,
                                       const Eigen::RowVectorXf& v) {
  store(layer, pos, k.data(), v.data());
  Eigen::RowVectorXf out(q.size());
  std::vector<float> logits, mean;
  std::vector<int> order;
  for (int kv = 0; kv < n_kv_; ++kv) attend_row(layer, kv, pos, q.data(), out.data(), logits, mean, order);
  return out;
}

void TopKDecoder::attend_layer(int layer, int pos0, const MatrixRM& q, const MatrixRM& k, const MatrixRM& v,
                               MatrixRM& out) {
  const int T = static_cast<int>(q.rows());
  for (int t = 0; t < T; ++t) store(layer, pos0 + t, k.row(t).data(), v.row(t).data());
    // Every row reads stored keys only (its own and earlier ones): rows are independent.
#pragma omp parallel
  {
    std::vector<float> logits, mean;
    std::vector<int> order;
#pragma omp for schedule(dynamic, 16)
    for (int t = 0; t < T; ++t)
      for (int kv = 0; kv < n_kv_; ++kv)
        attend_row(layer, kv, pos0 + t, q.row(t).data(), out.row(t).data(), logits, mean, order);
  }
}

MatrixRM TopKDecoder::prefill(std::span<const int> tokens, bool all_logits) {
  require(pos_ + static_cast<int>(tokens.size()) <= capacity_,
          "top-k attention: capacity " + std::to_string(capacity_) + " exceeded");
  MatrixRM logits = model_.forward_layered(tokens, pos_, *this, all_logits);
  pos_ += static_cast<int>(tokens.size());
  return logits;
}

Eigen::RowVectorXf TopKDecoder::step(int token) {
  require(pos_ < capacity_, "top-k attention: capacity " + std::to_string(capacity_) + " exceeded");
  Eigen::RowVectorXf logits = model_.decode_step(token, pos_, *this);
  ++pos_;
  return logits;
}

}  // namespace kvo::model
