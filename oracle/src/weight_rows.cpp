// Row sources of the offline problem and the blocked, ordered pass over them.
#include "kvo/oracle/weight_rows.hpp"

#include <algorithm>
#include <cmath>
#include <string>

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
  if (from >= to) return;
  const int workers = worker_count(threads, to - from);
  // A block per worker and step of the sequence, each row at a fixed stride of the widest row.
  const int block = workers == 1 ? 1 : 8 * workers;
  const size_t stride = static_cast<size_t>(to);
  std::vector<double> rows(static_cast<size_t>(block) * stride);
  for (int start = 0; start < to - from; start += block) {
    const int count = std::min(block, to - from - start);
    auto index = [&](int b) { return backwards ? to - 1 - (start + b) : from + start + b; };
    auto produce = [&](int b) {
      const int i = index(b);
      const std::span<double> out(rows.data() + static_cast<size_t>(b) * stride, static_cast<size_t>(i) + 1);
      w.row(i, out);
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
      consume(i, std::span<const double>(rows.data() + static_cast<size_t>(b) * stride, static_cast<size_t>(i) + 1));
    }
  }
}

}  // namespace kvo
