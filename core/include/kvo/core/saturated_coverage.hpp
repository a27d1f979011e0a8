// Saturated coverage: C(T) = sum_r min( sum_{j in T} s(r, j), alpha * sum_j s(r, j) ), the
// budget-additive family of Def D.1's examples. Monotone and submodular by construction for
// s >= 0 and alpha > 0: each client r saturates at a fraction alpha of its total attention.
#pragma once
#include <Eigen/Dense>

#include "kvo/core/set_function.hpp"

namespace kvo {

class SaturatedCoverage final : public SetFunction {
 public:
  SaturatedCoverage(Eigen::MatrixXd similarity, double alpha);

  int ground_size() const override { return static_cast<int>(s_.cols()); }
  SetFnTraits traits() const override;
  std::unique_ptr<Memo> empty_memo() const override;
  double gain(const Memo& memo, int j) const override;
  void add(Memo& memo, int j) const override;
  double value(const Memo& memo) const override;

 private:
  Eigen::MatrixXd s_;
  Eigen::VectorXd cap_;
  bool nonnegative_;
};

}  // namespace kvo
