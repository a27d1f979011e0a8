#include "kvo/core/output_fidelity.hpp"

#include "kvo/core/error.hpp"

namespace kvo {
namespace {
struct FidelityMemo final : Memo {
  Eigen::VectorXd sum;  // sum_{j in A} a_j v_j
  double mass = 0.0;
  std::unique_ptr<Memo> clone() const override { return std::make_unique<FidelityMemo>(*this); }
};
}  // namespace

OutputFidelity::OutputFidelity(Eigen::VectorXd weights, Eigen::MatrixXd values)
    : a_(std::move(weights)), v_(std::move(values)) {
  require(a_.size() == v_.rows(), "output fidelity: weights and values disagree in length");
  require(a_.size() == 0 || a_.minCoeff() >= 0.0, "output fidelity: weights must be >= 0");
  const double total = a_.sum();
  o_full_ = total > 0 ? Eigen::VectorXd(v_.transpose() * a_ / total) : Eigen::VectorXd::Zero(v_.cols());
}

double OutputFidelity::phi(const Eigen::VectorXd& weighted_sum, double mass) const {
  const Eigen::VectorXd o_t = mass > 0 ? Eigen::VectorXd(weighted_sum / mass) : Eigen::VectorXd::Zero(v_.cols());
  return o_full_.squaredNorm() - (o_t - o_full_).squaredNorm();
}

std::unique_ptr<Memo> OutputFidelity::empty_memo() const {
  auto m = std::make_unique<FidelityMemo>();
  m->sum = Eigen::VectorXd::Zero(v_.cols());
  return m;
}

double OutputFidelity::gain(const Memo& memo, int j) const {
  const auto& m = static_cast<const FidelityMemo&>(memo);
  const Eigen::VectorXd s = m.sum + a_[j] * v_.row(j).transpose();
  return phi(s, m.mass + a_[j]) - phi(m.sum, m.mass);
}

void OutputFidelity::add(Memo& memo, int j) const {
  auto& m = static_cast<FidelityMemo&>(memo);
  m.sum += a_[j] * v_.row(j).transpose();
  m.mass += a_[j];
  m.members.push_back(j);
}

double OutputFidelity::value(const Memo& memo) const {
  const auto& m = static_cast<const FidelityMemo&>(memo);
  return phi(m.sum, m.mass);
}

}  // namespace kvo
