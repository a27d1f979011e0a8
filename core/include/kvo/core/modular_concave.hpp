// f(T) = h(sum_{j in T} w_j): the family of H2O objectives (M) retained mass, (A) dense
// accumulated score and (B) one-step cache-dependent score (docs/theory.md §2.0).
// Monotone and submodular by construction when every w_j >= 0 (h is concave, non-decreasing).
#pragma once
#include <vector>

#include "kvo/core/concave.hpp"
#include "kvo/core/set_function.hpp"

namespace kvo {

class ModularConcave final : public SetFunction {
 public:
  ModularConcave(std::vector<double> weights, Concave h, std::string name = "modular-concave");

  int ground_size() const override { return static_cast<int>(w_.size()); }
  SetFnTraits traits() const override;
  std::unique_ptr<Memo> empty_memo() const override;
  double gain(const Memo& memo, int j) const override;
  void add(Memo& memo, int j) const override;
  double value(const Memo& memo) const override;
  // h(total - w_v): O(n) instead of O(n^2).
  std::vector<double> leave_one_out() const override;

  const std::vector<double>& weights() const { return w_; }
  Concave transform() const { return h_; }

 private:
  std::vector<double> w_;
  Concave h_;
  std::string name_;
  bool nonnegative_;
};

}  // namespace kvo
