#include "kvo/core/modular_concave.hpp"

#include <algorithm>

namespace kvo {
namespace {
struct SumMemo final : Memo {
  double z = 0.0;
  std::unique_ptr<Memo> clone() const override { return std::make_unique<SumMemo>(*this); }
};
}  // namespace

ModularConcave::ModularConcave(std::vector<double> weights, Concave h, std::string name)
    : w_(std::move(weights)), h_(h), name_(std::move(name)) {
  nonnegative_ = std::all_of(w_.begin(), w_.end(), [](double x) { return x >= 0.0; });
}

SetFnTraits ModularConcave::traits() const {
  // h(sum) of non-negative weights with h concave non-decreasing; with negative weights neither
  // property is guaranteed (except for h = id, which stays modular hence submodular).
  const bool sub = nonnegative_ || h_ == Concave::Identity;
  return {name_ + "[" + to_string(h_) + "]", nonnegative_, sub};
}

std::unique_ptr<Memo> ModularConcave::empty_memo() const { return std::make_unique<SumMemo>(); }

double ModularConcave::gain(const Memo& memo, int j) const {
  const double z = static_cast<const SumMemo&>(memo).z;
  return apply(h_, z + w_[j]) - apply(h_, z);
}

void ModularConcave::add(Memo& memo, int j) const {
  auto& m = static_cast<SumMemo&>(memo);
  m.z += w_[j];
  m.members.push_back(j);
}

double ModularConcave::value(const Memo& memo) const { return apply(h_, static_cast<const SumMemo&>(memo).z); }

std::vector<double> ModularConcave::leave_one_out() const {
  double total = 0.0;
  for (double x : w_) total += x;
  std::vector<double> out(w_.size());
  for (size_t v = 0; v < w_.size(); ++v) out[v] = apply(h_, total - w_[v]);
  return out;
}

}  // namespace kvo
