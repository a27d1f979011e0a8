#include "kvo/core/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "kvo/core/error.hpp"
#include "kvo/core/exp_fp64.hpp"
#include "kvo/core/lane_sum.hpp"
#include "kvo/core/multiversion.hpp"

namespace kvo {

namespace {

// Whether the keys are consecutive positions j, j + 1, ...
bool is_run(std::span<const int> keys) {
  for (size_t t = 1; t < keys.size(); ++t)
    if (keys[t] != keys[t - 1] + 1) return false;
  return true;
}

}  // namespace

HeadView::HeadView(const Trace& trace, int layer, int head)
    : trace_(&trace), layer_(layer), head_(head), n_(trace.n_tokens), d_(trace.head_dim), scale_(trace.attn_scale) {
  require(layer >= 0 && layer < trace.n_layers, "layer " + std::to_string(layer) + " is not in the trace");
  require(head >= 0 && head < trace.n_heads, "head " + std::to_string(head) + " is not in the trace");
  const size_t nd = static_cast<size_t>(n_) * d_;
  const int kvh = trace.kv_head_of(head);
  if (trace.has_qk(layer)) {
    q_ = trace.q[layer].data() + static_cast<size_t>(head) * nd;
    k_ = trace.k[layer].data() + static_cast<size_t>(kvh) * nd;
  }
  if (trace.has_values(layer)) v_ = trace.v[layer].data() + static_cast<size_t>(kvh) * nd;
  if (trace.has_attention(layer))
    attn_ = trace.attn[layer].data() + static_cast<size_t>(head) * n_ * static_cast<size_t>(n_);
}

HeadView HeadView::with_key_tiles() const {
  HeadView out = *this;
  if (k_ == nullptr || kt_) return out;
  const size_t tiles = (static_cast<size_t>(n_) + kKeyTile - 1) / kKeyTile;
  auto kt = std::make_shared<std::vector<double>>(tiles * kKeyTile * d_, 0.0);
  for (int j = 0; j < n_; ++j)
    for (int x = 0; x < d_; ++x) (*kt)[tile_index(j, x)] = static_cast<double>(k_[static_cast<size_t>(j) * d_ + x]);
  out.kt_ = std::move(kt);
  return out;
}

KVO_MULTIVERSION void HeadView::logits(int i, std::span<const int> keys, std::span<double> out) const {
  if (q_ != nullptr) {
    const float* qi = q_ + static_cast<size_t>(i) * d_;
    // Explicit fused multiply-add in index order: the GPU scorer and its CPU twin
    // (kvo/gpu/scorer_math.hpp) compute the same dot bit for bit, whatever the compiler contracts.
    // Several keys at a time (a whole tile of 32 consecutive positions on a view with key tiles, else 8): independent
    // chains keep the FMA units busy, and each chain is the same sequence of operations as one key alone, so the result
    // does not change.
    constexpr size_t kLanes = 8;
    size_t t = 0;
    while (t + kLanes <= keys.size()) {
      // A whole tile of consecutive key positions (tile_logits).
      if (kt_ && t + kKeyTile <= keys.size() && keys[t] % static_cast<int>(kKeyTile) == 0 &&
          keys[t + kKeyTile - 1] - keys[t] == static_cast<int>(kKeyTile) - 1 && is_run(keys.subspan(t, kKeyTile))) {
        tile_logits(i, keys[t], out.data() + t);
        t += kKeyTile;
        continue;
      }
      const float* kj[kLanes];
      double dot[kLanes] = {};
      for (size_t l = 0; l < kLanes; ++l) kj[l] = k_ + static_cast<size_t>(keys[t + l]) * d_;
      for (int x = 0; x < d_; ++x) {
        const double qx = qi[x];
        for (size_t l = 0; l < kLanes; ++l) dot[l] = std::fma(qx, static_cast<double>(kj[l][x]), dot[l]);
      }
      for (size_t l = 0; l < kLanes; ++l) out[t + l] = scale_ * dot[l];
      t += kLanes;
    }
    for (; t < keys.size(); ++t) {
      const float* kj = k_ + static_cast<size_t>(keys[t]) * d_;
      double dot = 0.0;
      for (int x = 0; x < d_; ++x) dot = std::fma(static_cast<double>(qi[x]), static_cast<double>(kj[x]), dot);
      out[t] = scale_ * dot;
    }
    return;
  }
  const float* row = attn_ + static_cast<size_t>(i) * n_;
  for (size_t t = 0; t < keys.size(); ++t) {
    const double a = row[keys[t]];
    out[t] = a > 0 ? std::log(a) : -std::numeric_limits<double>::infinity();
  }
}

// The tile's d rows of 32 keys are contiguous and already fp64 (exact conversions): each of the d
// steps loads 32 values and runs 32 chains in vector registers, each the fused chain of one key alone.
KVO_MULTIVERSION void HeadView::tile_logits(int i, int first, double* out) const {
  const float* qi = q_ + static_cast<size_t>(i) * d_;
  const double* tile = kt_->data() + tile_index(first, 0);
  double dot[kKeyTile] = {};
  for (int x = 0; x < d_; ++x) {
    const double qx = qi[x];
    const double* c = tile + static_cast<size_t>(x) * kKeyTile;
    for (size_t l = 0; l < kKeyTile; ++l) dot[l] = std::fma(qx, c[l], dot[l]);
  }
  for (size_t l = 0; l < kKeyTile; ++l) out[l] = scale_ * dot[l];
}

void HeadView::prefix_logits(std::span<const int> queries, double* out, size_t stride) const {
  thread_local std::vector<int> positions;
  int last = 0;
  for (int i : queries) last = std::max(last, i);
  if (positions.size() < static_cast<size_t>(last) + 1) {
    positions.resize(static_cast<size_t>(last) + 1);
    std::iota(positions.begin(), positions.end(), 0);
  }
  size_t done = 0;  // keys [0, done) of every query whose prefix covers them are computed
  if (q_ != nullptr && kt_ && queries.size() > 1) {
    // Tile by tile, every query of the block in turn, so that a tile read from memory is reused
    // from the L1 cache by the other queries (the pass is otherwise bound by reading K).
    for (; done + kKeyTile <= static_cast<size_t>(last) + 1; done += kKeyTile)
      for (size_t b = 0; b < queries.size(); ++b)
        if (done + kKeyTile <= static_cast<size_t>(queries[b]) + 1)
          tile_logits(queries[b], static_cast<int>(done), out + b * stride + done);
  }
  for (size_t b = 0; b < queries.size(); ++b) {
    const auto len = static_cast<size_t>(queries[b]) + 1;
    const size_t from = std::min(done, len / kKeyTile * kKeyTile);  // its whole tiles, computed above
    logits(queries[b], std::span<const int>(positions.data() + from, len - from),
           std::span<double>(out + b * stride + from, len - from));
  }
}

Eigen::VectorXd HeadView::value(int j) const {
  require(v_ != nullptr, "the trace has no values for this layer");
  Eigen::VectorXd out(d_);
  for (int x = 0; x < d_; ++x) out[x] = v_[static_cast<size_t>(j) * d_ + x];
  return out;
}

std::span<const float> HeadView::value_row(int j) const {
  require(v_ != nullptr, "the trace has no values for this layer");
  return {v_ + static_cast<size_t>(j) * static_cast<size_t>(d_), static_cast<size_t>(d_)};
}

KVO_MULTIVERSION void softmax(std::span<const double> logits, std::span<double> out) {
  if (logits.empty()) return;
  const double m = *std::max_element(logits.begin(), logits.end());
  if (!std::isfinite(m)) {
    std::fill(out.begin(), out.end(), 1.0 / static_cast<double>(logits.size()));
    return;
  }
  for (size_t t = 0; t < logits.size(); ++t) out[t] = exp_fp64(logits[t] - m);
  const double s = lane_sum(logits.size(), [&](size_t t) { return out[t]; });
  for (double& x : out) x /= s;
}

void prefix_attention(const HeadView& head, int i, std::vector<int>& keys, std::vector<double>& logits,
                      std::vector<double>& probs) {
  keys.resize(static_cast<size_t>(i) + 1);
  std::iota(keys.begin(), keys.end(), 0);
  logits.resize(keys.size());
  probs.resize(keys.size());
  head.logits(i, keys, logits);
  softmax(logits, probs);
}

Eigen::MatrixXd dense_attention(const HeadView& given) {
  // Blocks of queries over a view with key tiles (prefix_logits): the same bits as each query's
  // prefix_attention, several times faster.
  const HeadView head = given.with_key_tiles();
  const int n = head.n();
  constexpr int kBlock = 4;
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(n, n);
  std::vector<double> logits(static_cast<size_t>(kBlock) * static_cast<size_t>(n)), p(static_cast<size_t>(n));
  std::vector<int> queries;
  for (int first = 0; first < n; first += kBlock) {
    queries.clear();
    for (int i = first; i < std::min(n, first + kBlock); ++i) queries.push_back(i);
    head.prefix_logits(queries, logits.data(), static_cast<size_t>(n));
    for (size_t b = 0; b < queries.size(); ++b) {
      const int i = queries[b];
      const auto len = static_cast<size_t>(i) + 1;
      softmax(std::span<const double>(logits.data() + b * static_cast<size_t>(n), len),
              std::span<double>(p.data(), len));
      for (int j = 0; j <= i; ++j) a(i, j) = p[static_cast<size_t>(j)];
    }
  }
  return a;
}

}  // namespace kvo
