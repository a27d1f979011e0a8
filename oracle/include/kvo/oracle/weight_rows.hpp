// The weights of an offline problem a row at a time, so that no solver or check has to hold the
// n x n matrix: rows of a dense matrix, or a head's causal attention recomputed from q and k.
#pragma once
#include <Eigen/Dense>
#include <functional>
#include <span>
#include <vector>

#include "kvo/core/attention.hpp"

namespace kvo {

class WeightRows {
 public:
  virtual ~WeightRows() = default;
  virtual int n() const = 0;
  // w(i, 0..i) into out (out.size() == i + 1). Safe to call from several threads at once.
  virtual void row(int i, std::span<double> out) const = 0;
  // Several rows at once, w(is[b], 0..is[b]) into out + b * stride: the same values as row(); a
  // source that shares work across rows (recomputed attention) overrides it.
  virtual void rows(std::span<const int> is, double* out, size_t stride) const;
};

// Row i of a lower-triangular matrix (entries above the diagonal are never read).
class DenseWeightRows final : public WeightRows {
 public:
  explicit DenseWeightRows(const Eigen::MatrixXd& w);  // w must outlive this; kvo::Error unless square
  int n() const override { return static_cast<int>(w_.rows()); }
  void row(int i, std::span<double> out) const override;

 private:
  const Eigen::MatrixXd& w_;
};

// Row i of dense_attention(head), recomputed on every call (the same bits as the matrix's row).
class AttentionWeightRows final : public WeightRows {
 public:
  // head's trace must outlive this; it keeps a copy of the head with key tiles (n * d doubles).
  explicit AttentionWeightRows(const HeadView& head) : head_(head.with_key_tiles()) {}
  int n() const override { return head_.n(); }
  void row(int i, std::span<double> out) const override;
  void rows(std::span<const int> is, double* out, size_t stride) const override;

 private:
  HeadView head_;
};

// Row i of the mean over a KV head's query group of dense_attention(head) (the decoding units of
// `oracle allocation`), recomputed on every call.
class GroupMeanWeightRows final : public WeightRows {
 public:
  explicit GroupMeanWeightRows(std::vector<HeadView> heads);  // the heads' traces must outlive this
  int n() const override { return heads_.front().n(); }
  void row(int i, std::span<double> out) const override;

 private:
  std::vector<HeadView> heads_;
};

// The first m rows of another source: the offline problem on its first m steps.
class PrefixWeightRows final : public WeightRows {
 public:
  PrefixWeightRows(const WeightRows& rows, int m);  // rows must outlive this; kvo::Error unless 1 <= m <= rows.n()
  int n() const override { return m_; }
  void row(int i, std::span<double> out) const override { rows_.row(i, out); }
  void rows(std::span<const int> is, double* out, size_t stride) const override { rows_.rows(is, out, stride); }

 private:
  const WeightRows& rows_;
  int m_;
};

// Row s of a problem folded into pages of b positions (offline_pages.hpp): the sum of the token
// rows t in [s b, (s + 1) b) over each page's columns, W(s, p) = sum_t sum_{j in p, j <= t} w(t, j).
class PagedWeightRows final : public WeightRows {
 public:
  PagedWeightRows(const WeightRows& tokens, int page_size);  // tokens must outlive this
  int n() const override;
  void row(int s, std::span<double> out) const override;

 private:
  const WeightRows& tokens_;
  int b_;
};

// Calls consume(i, w(i, 0..i)) for i = from .. to - 1 (or to - 1 down to from when backwards), in
// that order, producing blocks of rows on `threads` threads (<= 0: all cores) while only the
// consumer sees them in sequence. A row that is negative or not finite is a kvo::Error.
void for_each_row(const WeightRows& w, int from, int to, bool backwards, int threads,
                  const std::function<void(int, std::span<const double>)>& consume);
// The same over several units in lockstep: consume(i, u, w_u(i, 0..i)) for u = 0 .. H - 1 at each i.
void for_each_unit_row(std::span<const WeightRows* const> units, int from, int to, bool backwards, int threads,
                       const std::function<void(int, int, std::span<const double>)>& consume);

}  // namespace kvo
