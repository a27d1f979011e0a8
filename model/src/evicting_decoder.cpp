#include "kvo/model/evicting_decoder.hpp"

#include <algorithm>
#include <cmath>

#include "kvo/core/error.hpp"

namespace kvo::model {

EvictingDecoder::EvictingDecoder(const Llama& model, KvEvictionManager& manager, int slots, int seq)
    : model_(model),
      manager_(manager),
      seq_(seq),
      slots_(slots),
      n_kv_(model.config().n_kv_heads),
      hd_(model.config().head_dim),
      group_(model.config().n_heads / model.config().n_kv_heads) {
  const auto& c = model.config();
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < n_kv_; ++h)
      require(manager.budget(l, h).total + 1 <= slots,
              "decoder pools of " + std::to_string(slots) + " rows cannot hold a budget of " +
                  std::to_string(manager.budget(l, h).total) + " plus the new token");
  pools_.resize(static_cast<size_t>(c.n_layers) * n_kv_);
  for (auto& p : pools_) {
    p.k = MatrixRM::Zero(slots, hd_);
    p.v = MatrixRM::Zero(slots, hd_);
    p.pos.assign(static_cast<size_t>(slots), -1);
  }
}

Eigen::RowVectorXf EvictingDecoder::step(int token) {
  Eigen::RowVectorXf logits = model_.decode_step(token, pos_, *this);
  ++pos_;
  peak_ = std::max(peak_, bytes_held());
  return logits;
}

MatrixRM EvictingDecoder::prefill(std::span<const int> tokens, bool all_logits) {
  MatrixRM logits = model_.forward_layered(tokens, pos_, *this, all_logits);
  pos_ += static_cast<int>(tokens.size());
  size_t most = 0;
  for (const auto& p : pools_) most += p.most;
  peak_ = std::max(peak_, most * static_cast<size_t>(hd_) * 2 * sizeof(float));
  return logits;
}

size_t EvictingDecoder::bytes_allocated() const {
  return pools_.size() * static_cast<size_t>(slots_) * static_cast<size_t>(hd_) * 2 * sizeof(float);
}

size_t EvictingDecoder::held_rows() const {
  size_t rows = 0;
  for (const auto& p : pools_) rows += p.rows.size();
  return rows;
}

size_t EvictingDecoder::bytes_held() const { return held_rows() * static_cast<size_t>(hd_) * 2 * sizeof(float); }

std::vector<int> EvictingDecoder::held(int layer, int kv_head) const {
  const Pool& P = pool(layer, kv_head);
  std::vector<int> out;
  for (int r : P.rows) out.push_back(P.pos[static_cast<size_t>(r)]);
  return out;
}

void EvictingDecoder::attend_unit(int layer, int kv, int pos, const float* q, const float* k, const float* v,
                                  float* out, Scratch& s) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd_));
  Pool& P = pool(layer, kv);
  const auto free_row = std::find(P.pos.begin(), P.pos.end(), -1);
  require(free_row != P.pos.end(), "decoder pool full at layer " + std::to_string(layer));  // budget guard
  const int row = static_cast<int>(free_row - P.pos.begin());
  P.pos[static_cast<size_t>(row)] = pos;
  P.k.row(row) = Eigen::Map<const Eigen::RowVectorXf>(k + kv * hd_, hd_);
  P.v.row(row) = Eigen::Map<const Eigen::RowVectorXf>(v + kv * hd_, hd_);
  P.rows.push_back(row);  // the newest position is the largest: rows stay in position order
  const int m = static_cast<int>(P.rows.size());
  s.positions.resize(static_cast<size_t>(m));
  for (int t = 0; t < m; ++t)
    s.positions[static_cast<size_t>(t)] = P.pos[static_cast<size_t>(P.rows[static_cast<size_t>(t)])];
  s.agg.assign(static_cast<size_t>(m), 0.0);
  s.p.resize(static_cast<size_t>(m));
  for (int hq = kv * group_; hq < (kv + 1) * group_; ++hq) {
    const Eigen::Map<const Eigen::RowVectorXf> qh(q + hq * hd_, hd_);
    float mx = -INFINITY;
    for (int t = 0; t < m; ++t) {
      const float sc = qh.dot(P.k.row(P.rows[static_cast<size_t>(t)])) * scale;
      s.p[static_cast<size_t>(t)] = sc;
      mx = std::max(mx, sc);
    }
    double sum = 0.0;
    for (int t = 0; t < m; ++t) {
      s.p[static_cast<size_t>(t)] = std::exp(static_cast<float>(s.p[static_cast<size_t>(t)]) - mx);
      sum += s.p[static_cast<size_t>(t)];
    }
    Eigen::Map<Eigen::RowVectorXf> o(out + hq * hd_, hd_);
    o.setZero();
    for (int t = 0; t < m; ++t) {
      s.p[static_cast<size_t>(t)] /= sum;
      o += static_cast<float>(s.p[static_cast<size_t>(t)]) * P.v.row(P.rows[static_cast<size_t>(t)]);
      s.agg[static_cast<size_t>(t)] += s.p[static_cast<size_t>(t)] / group_;
    }
  }
  // The manager decides; evicted rows are freed (their memory is reused by the next token).
  for (int gone : manager_.step(seq_, layer, kv, pos, s.positions, s.agg)) {
    const auto it = std::find(s.positions.begin(), s.positions.end(), gone);
    const size_t t = static_cast<size_t>(it - s.positions.begin());
    P.pos[static_cast<size_t>(P.rows[t])] = -1;
    P.rows.erase(P.rows.begin() + static_cast<long>(t));
    s.positions.erase(it);
  }
  P.most = std::max(P.most, P.rows.size());
}

Eigen::RowVectorXf EvictingDecoder::attend(int layer, int pos, const Eigen::RowVectorXf& q, const Eigen::RowVectorXf& k,
                                           const Eigen::RowVectorXf& v) {
  Eigen::RowVectorXf out(q.size());
  Scratch s;
  for (int kv = 0; kv < n_kv_; ++kv) attend_unit(layer, kv, pos, q.data(), k.data(), v.data(), out.data(), s);
  return out;
}

void EvictingDecoder::attend_layer(int layer, int pos0, const MatrixRM& q, const MatrixRM& k, const MatrixRM& v,
                                   MatrixRM& out) {
  const int T = static_cast<int>(q.rows());
  // Units are independent: each KV head replays its steps in order, KV heads in parallel. An
  // error in one (a policy refusing a step) is carried out of the parallel region.
  std::string failure;
#pragma omp parallel for schedule(dynamic)
  for (int kv = 0; kv < n_kv_; ++kv) {
    Scratch s;
    try {
      for (int t = 0; t < T; ++t)
        attend_unit(layer, kv, pos0 + t, q.row(t).data(), k.row(t).data(), v.row(t).data(), out.row(t).data(), s);
    } catch (const std::exception& e) {
#pragma omp critical
      failure = e.what();
    }
  }
  if (!failure.empty()) throw Error(failure);
}

}  // namespace kvo::model
