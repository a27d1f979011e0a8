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
  // A block per worker and step of the sequence, each row at a fixed stride of the widest row.
  const int block = workers == 1 ? 1 : 8 * workers;
  const size_t stride = static_cast<size_t>(to);
  std::vector<double> rows(static_cast<size_t>(block) * stride);
  for (int start = 0; start < total; start += block) {
    const int count = std::min(block, total - start);
    // Entry e of the sequence is unit e % h's row index(e / h).
    auto index = [&](int b) {
      const int step = (start + b) / h;
      return backwards ? to - 1 - step : from + step;
    };
    auto produce = [&](int b) {
      const int i = index(b);
      const std::span<double> out(rows.data() + static_cast<size_t>(b) * stride, static_cast<size_t>(i) + 1);
      units[static_cast<size_t>((start + b) % h)]->row(i, out);
      for (int j = 0; j <= i; ++j)
        if (!(std::isfinite(out[static_cast<size_t>(j)]) && out[static_cast<size_t>(j)] >= 0.0))
          throw Error("offline problem: w(" + std::to_string(i) + ", " + std::to_string(j) +
                      ") is negative or not finite");
    };
    if (workers == 1)
      produce(0);
    else
      parallel_for(count, workers, produce);
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
