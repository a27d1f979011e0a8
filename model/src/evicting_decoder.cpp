#include "kvo/model/evicting_decoder.hpp"

#include <algorithm>
#include <cmath>

#include "kvo/core/error.hpp"

namespace kvo::model {

EvictingDecoder::EvictingDecoder(const Llama& model, KvEvictionManager& manager, int slots, int seq)
    : EvictingDecoder(PoolShape{.n_layers = model.config().n_layers,
                                .n_kv_heads = model.config().n_kv_heads,
                                .head_dim = model.config().head_dim,
                                .group = model.config().n_heads / model.config().n_kv_heads,
                                .scale = 1.0f / std::sqrt(static_cast<float>(model.config().head_dim))},
                      manager, slots, seq) {
  model_ = &model;
}

EvictingDecoder::EvictingDecoder(const PoolShape& shape, KvEvictionManager& manager, int slots, int seq)
    : model_(nullptr),
      manager_(manager),
      seq_(seq),
      slots_(slots),
      n_layers_(shape.n_layers),
      n_kv_(shape.n_kv_heads),
      hd_(shape.head_dim),
      group_(shape.group),
      scale_(shape.scale) {
  require(n_layers_ >= 1 && n_kv_ >= 1 && hd_ >= 1 && group_ >= 1 && scale_ > 0,
          "decoder pools: the shape needs layers, KV heads, a head size, a group and a scale > 0");
  const CacheManagerOptions& mo = manager.options();
  require(mo.n_layers == n_layers_ && mo.n_kv_heads == n_kv_,
          "decoder pools: the manager's units (" + std::to_string(mo.n_layers) + " layers x " +
              std::to_string(mo.n_kv_heads) + " KV heads) are not the pools' shape");
  require(seq >= 0 && seq < mo.batch, "decoder pools: sequence " + std::to_string(seq) +
                                          " is outside the manager's batch of " + std::to_string(mo.batch));
  for (int l = 0; l < n_layers_; ++l)
    for (int h = 0; h < n_kv_; ++h)
      require(manager.max_held(l, h) + 1 <= slots, "decoder pools of " + std::to_string(slots) +
                                                       " rows cannot hold a budget of " +
                                                       std::to_string(manager.max_held(l, h)) + " plus the new token");
  pools_.resize(static_cast<size_t>(n_layers_) * n_kv_);
  for (auto& p : pools_) {
    p.k = MatrixRM::Zero(slots, hd_);
    p.v = MatrixRM::Zero(slots, hd_);
    p.pos.assign(static_cast<size_t>(slots), -1);
  }
}

Eigen::RowVectorXf EvictingDecoder::step(int token) {
  require(model_ != nullptr, "decoder pools: step() needs a model (this decoder holds pools only)");
  Eigen::RowVectorXf logits = model_->decode_step(token, pos_, *this);
  ++pos_;
  if (manager_.budget_scope() == BudgetScope::Model)
    for (int l = 0; l < n_layers_; ++l) settle(l);
  peak_ = std::max(peak_, bytes_held());
  return logits;
}

MatrixRM EvictingDecoder::prefill(std::span<const int> tokens, bool all_logits) {
  require(model_ != nullptr, "decoder pools: prefill() needs a model (this decoder holds pools only)");
  const int T = static_cast<int>(tokens.size());
  bool decides_inside = false;  // a model-wide group may evict inside the span (before its last token)
  if (manager_.budget_scope() == BudgetScope::Model)
    for (int p = pos_; p < pos_ + T - 1 && !decides_inside; ++p) decides_inside = manager_.lockstep_at(p);
  if (decides_inside) {
    // A model-wide budget decides after every layer saw a position; layer by layer, a layer would
    // step past a decision the later layers have not made yet. Token by token instead.
    MatrixRM logits(all_logits ? T : std::min(T, 1), model_->config().vocab);
    for (int t = 0; t < T; ++t) {
      const Eigen::RowVectorXf row = step(tokens[static_cast<size_t>(t)]);
      if (all_logits || t == T - 1) logits.row(all_logits ? t : 0) = row;
    }
    return logits;
  }
  const int L = n_layers_;
  span_rows_.assign(static_cast<size_t>(L), std::vector<size_t>(static_cast<size_t>(T), 0));
  MatrixRM logits = model_->forward_layered(tokens, pos_, *this, all_logits);
  pos_ += T;
  size_t most = 0;
  if (manager_.budget_scope() == BudgetScope::Head) {
    for (const auto& p : pools_) most += p.most;  // every pool is fullest at the same step
  } else {
    // Pools sharing a budget are fullest at different steps: the most held at once, step by step.
    if (manager_.budget_scope() == BudgetScope::Model && T > 0)
      for (int l = 0; l < L; ++l) {  // the span's one decision, made after its last layer
        settle(l);
        span_rows_[static_cast<size_t>(l)].back() = layer_rows(l);
      }
    for (int t = 0; t < T; ++t) {
      size_t at = 0;
      for (int l = 0; l < L; ++l) at += span_rows_[static_cast<size_t>(l)][static_cast<size_t>(t)];
      most = std::max(most, at);
    }
  }
  peak_ = std::max(peak_, most * static_cast<size_t>(hd_) * 2 * sizeof(float));
  return logits;
}

void EvictingDecoder::set_kv_quantization(const KvQuantization& q) {
  q.validate();
  quant_ = q;
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

void EvictingDecoder::drop(Pool& P, std::span<const int> gone, std::vector<int>* positions) {
  for (int g : gone) {
    const auto it =
        std::find_if(P.rows.begin(), P.rows.end(), [&](int r) { return P.pos[static_cast<size_t>(r)] == g; });
    require(it != P.rows.end(),
            "internal: the eviction manager evicted position " + std::to_string(g) + " that the decoder does not hold");
    P.pos[static_cast<size_t>(*it)] = -1;
    if (positions) positions->erase(positions->begin() + (it - P.rows.begin()));
    P.rows.erase(it);
  }
}

size_t EvictingDecoder::layer_rows(int layer) const {
  size_t rows = 0;
  for (int kv = 0; kv < n_kv_; ++kv) rows += pool(layer, kv).rows.size();
  return rows;
}

void EvictingDecoder::settle(int layer) {
  for (int kv = 0; kv < n_kv_; ++kv) {
    Pool& P = pool(layer, kv);
    drop(P, manager_.take_evicted(seq_, layer, kv));
    P.most = std::max(P.most, P.rows.size());
  }
}

std::vector<int> EvictingDecoder::held(int layer, int kv_head) const {
  const Pool& P = pool(layer, kv_head);
  std::vector<int> out;
  for (int r : P.rows) out.push_back(P.pos[static_cast<size_t>(r)]);
  return out;
}

void EvictingDecoder::weighted_values(const Pool& P, const float* w, size_t m, float* out) const {
  // out[g] = sum over t of w[g][t] * value(t), each lane summed in the order of t from zero, one
  // multiply then one add per term: the rounding of a plain loop over the rows, which is what the
  // bits of every earlier run and of the engine's own decoder rest on. The lanes are independent, so
  // they are summed 16 at a time in registers, over tiles of rows whose values stay in the cache.
  constexpr size_t kLanes = 16, kTile = 64;
  const size_t hd = static_cast<size_t>(hd_), G = static_cast<size_t>(group_);
  std::fill(out, out + G * hd, 0.0f);
  for (size_t t0 = 0; t0 < m; t0 += kTile) {
    const size_t t1 = std::min(m, t0 + kTile);
    for (size_t g = 0; g < G; ++g) {
      const float* const wg = w + g * m;
      float* const og = out + g * hd;
      size_t c = 0;
      for (; c + kLanes <= hd; c += kLanes) {
        float acc[kLanes];
        std::copy(og + c, og + c + kLanes, acc);
        for (size_t t = t0; t < t1; ++t) {
          const float* const v = P.v.row(P.rows[t]).data() + c;
          const float wt = wg[t];
          for (size_t i = 0; i < kLanes; ++i) acc[i] = acc[i] + wt * v[i];
        }
        std::copy(acc, acc + kLanes, og + c);
      }
      if (c < hd)  // a head size that is no multiple of 16
        for (size_t t = t0; t < t1; ++t) {
          const float* const v = P.v.row(P.rows[t]).data();
          for (size_t i = c; i < hd; ++i) og[i] = og[i] + wg[t] * v[i];
        }
    }
  }
}

void EvictingDecoder::attend_unit(int layer, int kv, int pos, const float* q, const float* k, const float* v,
                                  float* out, Scratch& s) {
  const float scale = scale_;
  Pool& P = pool(layer, kv);
  const auto free_row = std::find(P.pos.begin(), P.pos.end(), -1);
  require(free_row != P.pos.end(), "decoder pool full at layer " + std::to_string(layer));  // budget guard
  const int row = static_cast<int>(free_row - P.pos.begin());
  P.pos[static_cast<size_t>(row)] = pos;
  P.k.row(row) = Eigen::Map<const Eigen::RowVectorXf>(k + kv * hd_, hd_);
  P.v.row(row) = Eigen::Map<const Eigen::RowVectorXf>(v + kv * hd_, hd_);
  if (quant_.on()) {
    quantize_dequantize(std::span<float>(P.k.row(row).data(), static_cast<size_t>(hd_)), quant_);
    quantize_dequantize(std::span<float>(P.v.row(row).data(), static_cast<size_t>(hd_)), quant_);
  }
  P.rows.push_back(row);  // the newest position is the largest: rows stay in position order
  const int m = static_cast<int>(P.rows.size());
  s.positions.resize(static_cast<size_t>(m));
  for (int t = 0; t < m; ++t)
    s.positions[static_cast<size_t>(t)] = P.pos[static_cast<size_t>(P.rows[static_cast<size_t>(t)])];
  // Per query head g of the group, in the rounding of one plain loop per head: float logits, their
  // largest, float exp, a double sum, the weights; agg, the group's mean weight per row, adds the
  // heads in order. Each key is read once for the whole group.
  const int G = group_;
  const size_t M = static_cast<size_t>(m);
  s.agg.assign(M, 0.0);
  s.p.resize(static_cast<size_t>(G) * M);
  s.w.resize(static_cast<size_t>(G) * M);
  s.top.assign(static_cast<size_t>(G), -INFINITY);
  const float* const q0 = q + static_cast<size_t>(kv) * G * hd_;
  for (size_t t = 0; t < M; ++t) {
    const auto key = P.k.row(P.rows[t]);
    for (int g = 0; g < G; ++g) {
      const float sc = Eigen::Map<const Eigen::RowVectorXf>(q0 + static_cast<size_t>(g) * hd_, hd_).dot(key) * scale;
      s.p[g * M + t] = sc;
      s.top[static_cast<size_t>(g)] = std::max(s.top[static_cast<size_t>(g)], sc);
    }
  }
  for (int g = 0; g < G; ++g) {
    double* const pg = s.p.data() + g * M;
    const float mx = s.top[static_cast<size_t>(g)];
    double sum = 0.0;
    for (size_t t = 0; t < M; ++t) {
      pg[t] = std::exp(static_cast<float>(pg[t]) - mx);
      sum += pg[t];
    }
    float* const wg = s.w.data() + g * M;
    for (size_t t = 0; t < M; ++t) {
      pg[t] /= sum;
      wg[t] = static_cast<float>(pg[t]);
      s.agg[t] += pg[t] / G;
    }
  }
  weighted_values(P, s.w.data(), M, out + static_cast<size_t>(kv) * G * hd_);
  // The manager decides; evicted rows are freed (their memory is reused by the next token). A
  // shared budget decides when its group's last unit steps (settle() collects the others').
  const std::vector<int> gone = manager_.step(seq_, layer, kv, pos, s.positions, s.agg);
  if (log_ && !gone.empty()) P.log.push_back({pos, gone});
  drop(P, gone, &s.positions);
  if (manager_.budget_scope() == BudgetScope::Head) P.most = std::max(P.most, P.rows.size());
}

Eigen::RowVectorXf EvictingDecoder::attend(int layer, int pos, const Eigen::RowVectorXf& q, const Eigen::RowVectorXf& k,
                                           const Eigen::RowVectorXf& v) {
  Eigen::RowVectorXf out(q.size());
  Scratch s;
  for (int kv = 0; kv < n_kv_; ++kv) attend_unit(layer, kv, pos, q.data(), k.data(), v.data(), out.data(), s);
  if (manager_.budget_scope() == BudgetScope::Layer) settle(layer);
  return out;
}

void EvictingDecoder::attend_layer(int layer, int pos0, const MatrixRM& q, const MatrixRM& k, const MatrixRM& v,
                                   MatrixRM& out) {
  const int T = static_cast<int>(q.rows());
  if (manager_.budget_scope() != BudgetScope::Head) {
    // Units sharing a budget step in lockstep: every KV head of the layer, one position at a time.
    Scratch s;
    for (int t = 0; t < T; ++t) {
      for (int kv = 0; kv < n_kv_; ++kv)
        attend_unit(layer, kv, pos0 + t, q.row(t).data(), k.row(t).data(), v.row(t).data(), out.row(t).data(), s);
      if (manager_.budget_scope() == BudgetScope::Layer) settle(layer);
      span_rows_[static_cast<size_t>(layer)][static_cast<size_t>(t)] = layer_rows(layer);
    }
    return;
  }
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

CacheManagerOptions closed_loop_manager(const LlamaConfig& c, const RunConfig& run, PolicyId id, const Budget& budget,
                                        int max_len) {
  CacheManagerOptions mo;
  mo.run = run.with_policy(id);
  mo.run.budget = budget;
  mo.run.prompt_len = 0;
  mo.n_layers = c.n_layers;
  mo.n_kv_heads = c.n_kv_heads;
  mo.max_len = max_len;
  return mo;
}

int decoder_slots(const KvEvictionManager& mgr) {
  const CacheManagerOptions& o = mgr.options();
  int slots = mgr.prompt_len() + 1;
  for (int l = 0; l < o.n_layers; ++l)
    for (int kv = 0; kv < o.n_kv_heads; ++kv) slots = std::max(slots, mgr.max_held(l, kv) + 1);
  return slots;
}

}  // namespace kvo::model
