// Row sources of the offline problem and the blocked, ordered pass over them.
#include "kvo/oracle/weight_rows.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "kvo/core/error.hpp"
#include "kvo/core/parallel.hpp"

namespace kvo {

DenseWeightRows::DenseWeightRows(const Eigen::MatrixXd& w) : w_(w) {
  require(w.rows() >= 1 && w.cols() == w.rows(), "offline problem: w must be a non-empty square matrix");
}

void DenseWeightRows::row(int i, std::span<double> out) const {
  for (int j = 0; j <= i; ++j) out[static_cast<size_t>(j)] = w_(i, j);
}

void WeightRows::rows(std::span<const int> is, double* out, size_t stride) const {
  for (size_t b = 0; b < is.size(); ++b)
    row(is[b], std::span<double>(out + b * stride, static_cast<size_t>(is[b]) + 1));
}

void AttentionWeightRows::rows(std::span<const int> is, double* out, size_t stride) const {
  head_.prefix_logits(is, out, stride);
  for (size_t b = 0; b < is.size(); ++b) {
    const std::span<double> r(out + b * stride, static_cast<size_t>(is[b]) + 1);
    softmax(r, r);  // elementwise, so in place gives prefix_attention's bits
  }
}

void AttentionWeightRows::row(int i, std::span<double> out) const {
  thread_local std::vector<int> keys;
  thread_local std::vector<double> logits, probs;
  prefix_attention(head_, i, keys, logits, probs);
  std::copy(probs.begin(), probs.end(), out.begin());
}

void for_each_row(const WeightRows& w, int from, int to, bool backwards, int threads,
                  const std::function<void(int, std::span<const double>)>& consume) {
  const WeightRows* one[] = {&w};
  for_each_unit_row(one, from, to, backwards, threads,
                    [&](int i, int, std::span<const double> row) { consume(i, row); });
}

void for_each_unit_row(std::span<const WeightRows* const> units, int from, int to, bool backwards, int threads,
                       const std::function<void(int, int, std::span<const double>)>& consume) {
  if (from >= to || units.empty()) return;
  const int h = static_cast<int>(units.size()), total = (to - from) * h;
  const int workers = worker_count(threads, total);
  // A block per worker and step of the sequence, each row at a fixed stride of the widest row. One
  // worker takes 4 steps at a time when there are few units, each unit's rows in one call (rows of
  // recomputed attention then share their reads of K); with many units, one step (memory).
  const int block = workers == 1 ? (h <= 8 ? 4 * h : h) : 8 * workers;
  const size_t stride = static_cast<size_t>(to);
  std::vector<double> rows(static_cast<size_t>(block) * stride);
  std::vector<int> is;
  for (int start = 0; start < total; start += block) {
    const int count = std::min(block, total - start);
    // Entry e of the sequence is unit e % h's row index(e / h).
    auto index = [&](int b) {
      const int step = (start + b) / h;
      return backwards ? to - 1 - step : from + step;
    };
    auto check = [&](int b) {
      const int i = index(b);
      const double* out = rows.data() + static_cast<size_t>(b) * stride;
      for (int j = 0; j <= i; ++j)
        if (!(std::isfinite(out[j]) && out[j] >= 0.0))
          throw Error("offline problem: w(" + std::to_string(i) + ", " + std::to_string(j) +
                      ") is negative or not finite");
    };
    if (workers == 1) {
      for (int u = 0; u < h && u < count; ++u) {  // start is a multiple of h: entry b is unit b % h
        is.clear();
        for (int b = u; b < count; b += h) is.push_back(index(b));
        units[static_cast<size_t>(u)]->rows(is, rows.data() + static_cast<size_t>(u) * stride,
                                            static_cast<size_t>(h) * stride);
      }
      for (int b = 0; b < count; ++b) check(b);
    } else {
      parallel_for(count, workers, [&](int b) {
        const int i = index(b);
        units[static_cast<size_t>((start + b) % h)]->row(
            i, std::span<double>(rows.data() + static_cast<size_t>(b) * stride, static_cast<size_t>(i) + 1));
        check(b);
      });
    }
    for (int b = 0; b < count; ++b) {
      const int i = index(b);
      consume(i, (start + b) % h,
              std::span<const double>(rows.data() + static_cast<size_t>(b) * stride, static_cast<size_t>(i) + 1));
    }
  }
}

GroupMeanWeightRows::GroupMeanWeightRows(std::vector<HeadView> heads) : heads_(std::move(heads)) {
  require(!heads_.empty(), "offline problem: a query group needs at least one head");
}

void GroupMeanWeightRows::row(int i, std::span<double> out) const {
  thread_local std::vector<int> keys;
  thread_local std::vector<double> logits, probs;
  std::fill(out.begin(), out.end(), 0.0);
  for (const HeadView& head : heads_) {
    prefix_attention(head, i, keys, logits, probs);
    for (size_t j = 0; j < out.size(); ++j) out[j] += probs[j];
  }
  for (double& x : out) x /= static_cast<double>(heads_.size());
}

PrefixWeightRows::PrefixWeightRows(const WeightRows& rows, int m) : rows_(rows), m_(m) {
  require(m >= 1 && m <= rows.n(),
          "offline problem: a prefix of " + std::to_string(m) + " steps of a problem of " + std::to_string(rows.n()));
}

PagedWeightRows::PagedWeightRows(const WeightRows& tokens, int page_size) : tokens_(tokens), b_(page_size) {
  require(page_size >= 1, "offline problem: a page holds at least one position");
}

int PagedWeightRows::n() const { return (tokens_.n() + b_ - 1) / b_; }

void PagedWeightRows::row(int s, std::span<double> out) const {
  thread_local std::vector<double> token_row;
  std::fill(out.begin(), out.end(), 0.0);
  const int n = tokens_.n();
  for (int t = s * b_; t < std::min(n, (s + 1) * b_); ++t) {
    token_row.resize(static_cast<size_t>(t) + 1);
    tokens_.row(t, token_row);
    for (int j = 0; j <= t; ++j) out[static_cast<size_t>(j / b_)] += token_row[static_cast<size_t>(j)];
  }
}

}  // namespace kvo
