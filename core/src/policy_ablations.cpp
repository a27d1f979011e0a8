// Look-ahead heavy hitters and the Sparse Transformer's strided and fixed patterns under a budget.
#include <algorithm>

#include "kvo/core/error.hpp"
#include "kvo/core/policies.hpp"

namespace kvo {

std::string HeavyHitterAblationPolicy::name() const {
  return policy_name(mode_ == Mode::HeavyOnly ? PolicyId::Heavy : PolicyId::AntiH2O);
}

void HeavyHitterAblationPolicy::on_attend(int, std::span<const int> attended, std::span<const double> probs) {
  for (size_t t = 0; t < attended.size(); ++t) score_[static_cast<size_t>(attended[t])] += probs[t];
}

size_t HeavyHitterAblationPolicy::victim(int) {
  if (mode_ == Mode::HeavyOnly) return argmin_score(score_, cache().size());
  const auto& c = cache();
  const size_t count = std::max<size_t>(candidates(setup().budget.recent), 1);
  size_t best = 0;
  for (size_t p = 1; p < count; ++p)
    if (score_[static_cast<size_t>(c[p])] > score_[static_cast<size_t>(c[best])]) best = p;  // ties: the oldest
  return best;
}

void LookaheadPolicy::on_begin() {
  const Eigen::MatrixXd* dense = setup().dense;
  require(
      dense != nullptr && dense->cols() >= setup().n,
      "policy lookahead ranks tokens by the attention of every query, future ones included: it needs the dense "
      "attention of the whole sequence (replay gives it; a decoder follows its schedule from the full cache's trace)");
  score_.assign(static_cast<size_t>(setup().n), 0.0);
  for (int j = 0; j < setup().n; ++j) score_[static_cast<size_t>(j)] = dense->col(j).sum();
}

std::string SparsePatternPolicy::name() const {
  const PolicyId id = pattern_ == Pattern::Strided ? (heavy_ ? PolicyId::StridedH2O : PolicyId::Strided)
                                                   : (heavy_ ? PolicyId::FixedH2O : PolicyId::Fixed);
  return policy_name(id);
}

void SparsePatternPolicy::on_begin() {
  const int n = std::max(setup().n, 1);
  const int r = setup().budget.recent;
  const int h = std::max(setup().budget.total - r, 0);
  heavy_slots_ = heavy_ ? h / 2 : 0;
  const long p = std::max(h - heavy_slots_, 1);
  if (pattern_ == Pattern::Strided) {
    period_ = static_cast<int>(std::max(1L, (n + p - 1) / p));
  } else {
    period_ = std::max(r, 1);
    summary_ = static_cast<int>(std::clamp(p * period_ / n, 1L, static_cast<long>(period_)));
  }
  score_.assign(heavy_ ? static_cast<size_t>(n) : 0, 0.0);
}

bool SparsePatternPolicy::on_pattern(int j) const {
  return pattern_ == Pattern::Strided ? (j + 1) % period_ == 0 : j % period_ >= period_ - summary_;
}

void SparsePatternPolicy::on_attend(int, std::span<const int> attended, std::span<const double> probs) {
  if (heavy_)
    for (size_t t = 0; t < attended.size(); ++t) score_[static_cast<size_t>(attended[t])] += probs[t];
}

size_t SparsePatternPolicy::victim(int i) {
  const auto& c = cache();
  // The local part: strided keeps the last r tokens, fixed the current block.
  size_t count = 0;
  if (pattern_ == Pattern::Strided) {
    count = candidates(setup().budget.recent);
  } else {
    const int block = i / period_ * period_;
    count = static_cast<size_t>(std::lower_bound(c.begin(), c.end(), block) - c.begin());
  }
  if (count == 0) return 0;
  // Heavy hitters: the heavy_slots_ highest scores among the candidates (ties keep the newer token).
  order_.clear();
  for (size_t q = 0; q < count; ++q) order_.push_back(q);
  const size_t exempt = std::min(static_cast<size_t>(heavy_slots_), count - 1);
  if (exempt > 0) {
    const auto heavier = [&](size_t a, size_t b) {
      const double sa = score_[static_cast<size_t>(c[a])], sb = score_[static_cast<size_t>(c[b])];
      return sa != sb ? sa > sb : a > b;
    };
    std::nth_element(order_.begin(), order_.begin() + static_cast<long>(exempt - 1), order_.end(), heavier);
    std::sort(order_.begin() + static_cast<long>(exempt), order_.end());  // the rest, oldest first
  }
  const auto rest = std::span(order_).subspan(exempt);
  for (size_t q : rest)
    if (!on_pattern(c[q])) return q;
  return rest.front();
}

}  // namespace kvo
