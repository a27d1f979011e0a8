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

size_t EvictingDecoder::bytes_allocated() const {
  return pools_.size() * static_cast<size_t>(slots_) * static_cast<size_t>(hd_) * 2 * sizeof(float);
}

size_t EvictingDecoder::bytes_held() const {
  size_t rows = 0;
  for (const auto& p : pools_) rows += p.rows.size();
  return rows * static_cast<size_t>(hd_) * 2 * sizeof(float);
}

Eigen::RowVectorXf EvictingDecoder::attend(int layer, int pos, const Eigen::RowVectorXf& q, const Eigen::RowVectorXf& k,
                                           const Eigen::RowVectorXf& v) {
  Eigen::RowVectorXf out(q.size());
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd_));
  std::vector<int> positions;
  std::vector<double> agg, p;
  for (int kv = 0; kv < n_kv_; ++kv) {
    Pool& P = pool(layer, kv);
    const auto free_row = std::find(P.pos.begin(), P.pos.end(), -1);
    require(free_row != P.pos.end(), "decoder pool full at layer " + std::to_string(layer));  // budget guard
    const int row = static_cast<int>(free_row - P.pos.begin());
    P.pos[static_cast<size_t>(row)] = pos;
    P.k.row(row) = k.segment(kv * hd_, hd_);
    P.v.row(row) = v.segment(kv * hd_, hd_);
    P.rows.push_back(row);  // the newest position is the largest: rows stay in position order
    const int m = static_cast<int>(P.rows.size());
    positions.resize(static_cast<size_t>(m));
    for (int t = 0; t < m; ++t)
      positions[static_cast<size_t>(t)] = P.pos[static_cast<size_t>(P.rows[static_cast<size_t>(t)])];
    agg.assign(static_cast<size_t>(m), 0.0);
    p.resize(static_cast<size_t>(m));
    for (int hq = kv * group_; hq < (kv + 1) * group_; ++hq) {
      const auto qh = q.segment(hq * hd_, hd_);
      float mx = -INFINITY;
      for (int t = 0; t < m; ++t) {
        const float s = qh.dot(P.k.row(P.rows[static_cast<size_t>(t)])) * scale;
        p[static_cast<size_t>(t)] = s;
        mx = std::max(mx, s);
      }
      double sum = 0.0;
      for (int t = 0; t < m; ++t) {
        p[static_cast<size_t>(t)] = std::exp(static_cast<float>(p[static_cast<size_t>(t)]) - mx);
        sum += p[static_cast<size_t>(t)];
      }
      Eigen::RowVectorXf o = Eigen::RowVectorXf::Zero(hd_);
      for (int t = 0; t < m; ++t) {
        p[static_cast<size_t>(t)] /= sum;
        o += static_cast<float>(p[static_cast<size_t>(t)]) * P.v.row(P.rows[static_cast<size_t>(t)]);
        agg[static_cast<size_t>(t)] += p[static_cast<size_t>(t)] / group_;
      }
      out.segment(hq * hd_, hd_) = o;
    }
    // The manager decides; evicted rows are freed (their memory is reused by the next token).
    for (int gone : manager_.step(seq_, layer, kv, pos, positions, agg)) {
      const auto it = std::find(positions.begin(), positions.end(), gone);
      const size_t t = static_cast<size_t>(it - positions.begin());
      P.pos[static_cast<size_t>(P.rows[t])] = -1;
      P.rows.erase(P.rows.begin() + static_cast<long>(t));
      positions.erase(it);
    }
  }
  return out;
}

}  // namespace kvo::model
