#include "kvo/core/saturated_coverage.hpp"

#include "kvo/core/error.hpp"

namespace kvo {
namespace {
struct CoverMemo final : Memo {
  Eigen::VectorXd cur;  // sum_{j in A} s(r, j)
  double total = 0.0;
  std::unique_ptr<Memo> clone() const override { return std::make_unique<CoverMemo>(*this); }
};
}  // namespace

SaturatedCoverage::SaturatedCoverage(Eigen::MatrixXd similarity, double alpha) : s_(std::move(similarity)) {
  require(alpha > 0.0, "saturated coverage needs alpha > 0");
  cap_ = alpha * s_.rowwise().sum();
  nonnegative_ = s_.size() == 0 || s_.minCoeff() >= 0.0;
}

SetFnTraits SaturatedCoverage::traits() const { return {"saturated-coverage", nonnegative_, nonnegative_}; }

std::unique_ptr<Memo> SaturatedCoverage::empty_memo() const {
  auto m = std::make_unique<CoverMemo>();
  m->cur = Eigen::VectorXd::Zero(s_.rows());
  return m;
}

double SaturatedCoverage::gain(const Memo& memo, int j) const {
  const auto& m = static_cast<const CoverMemo&>(memo);
  return ((m.cur + s_.col(j)).cwiseMin(cap_) - m.cur.cwiseMin(cap_)).sum();
}

void SaturatedCoverage::add(Memo& memo, int j) const {
  auto& m = static_cast<CoverMemo&>(memo);
  m.cur += s_.col(j);
  m.total = m.cur.cwiseMin(cap_).sum();
  m.members.push_back(j);
}

double SaturatedCoverage::value(const Memo& memo) const { return static_cast<const CoverMemo&>(memo).total; }

}  // namespace kvo
