#include "kvo/core/facility_location.hpp"

#include "kvo/core/error.hpp"

namespace kvo {
namespace {
struct MaxMemo final : Memo {
  Eigen::VectorXd best;  // max_{j in A} s(r, j), 0 for A empty
  double total = 0.0;
  std::unique_ptr<Memo> clone() const override { return std::make_unique<MaxMemo>(*this); }
};
}  // namespace

FacilityLocation::FacilityLocation(Eigen::MatrixXd similarity)
    : owned_(std::move(similarity)), s_(owned_.data(), owned_.rows(), owned_.cols()) {
  init();
}

FacilityLocation::FacilityLocation(const double* data, int rows, int cols) : s_(data, rows, cols) {
  require(rows >= 0 && cols >= 0 && (data != nullptr || static_cast<long long>(rows) * cols == 0),
          "facility location: bad similarity buffer");
  init();
}

void FacilityLocation::init() { nonnegative_ = s_.size() == 0 || s_.minCoeff() >= 0.0; }

SetFnTraits FacilityLocation::traits() const { return {"facility-location", nonnegative_, nonnegative_}; }

std::unique_ptr<Memo> FacilityLocation::empty_memo() const {
  auto m = std::make_unique<MaxMemo>();
  m->best = Eigen::VectorXd::Zero(s_.rows());
  return m;
}

double FacilityLocation::gain(const Memo& memo, int j) const {
  const auto& m = static_cast<const MaxMemo&>(memo);
  return (s_.col(j) - m.best).cwiseMax(0.0).sum();
}

void FacilityLocation::add(Memo& memo, int j) const {
  auto& m = static_cast<MaxMemo&>(memo);
  m.best = m.best.cwiseMax(s_.col(j));
  m.total = m.best.sum();
  m.members.push_back(j);
}

double FacilityLocation::value(const Memo& memo) const { return static_cast<const MaxMemo&>(memo).total; }

}  // namespace kvo
