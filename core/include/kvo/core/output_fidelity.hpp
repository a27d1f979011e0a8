// Output fidelity of one query (docs/theory.md §2.0, objective E): with o_full = sum_j a_j v_j / sum_j a_j
// over the whole ground set and o_T = sum_{j in T} a_j v_j / sum_{j in T} a_j,
//   phi(T) = |o_full|^2 - |o_T - o_full|^2,   phi(empty) = 0 (o_empty := 0).
// Neither monotone nor submodular by construction: it tests the "attention is submodular" premise.
#pragma once
#include <Eigen/Dense>

#include "kvo/core/set_function.hpp"

namespace kvo {

class OutputFidelity final : public SetFunction {
 public:
  // weights: a_j >= 0 over the ground set; values: one row v_j per ground element.
  OutputFidelity(Eigen::VectorXd weights, Eigen::MatrixXd values);

  int ground_size() const override { return static_cast<int>(a_.size()); }
  SetFnTraits traits() const override { return {"output-fidelity", false, false}; }
  std::unique_ptr<Memo> empty_memo() const override;
  double gain(const Memo& memo, int j) const override;
  void add(Memo& memo, int j) const override;
  double value(const Memo& memo) const override;

 private:
  double phi(const Eigen::VectorXd& weighted_sum, double mass) const;
  Eigen::VectorXd a_;
  Eigen::MatrixXd v_;
  Eigen::VectorXd o_full_;
};

}  // namespace kvo
