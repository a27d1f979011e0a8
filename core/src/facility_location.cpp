#include "kvo/core/facility_location.hpp"

#include <algorithm>

#include "kvo/core/error.hpp"
#include "kvo/core/memory_limit.hpp"

namespace kvo {
namespace {
struct MaxMemo final : Memo {
  Eigen::VectorXd best;  // max_{j in A} s(r, j), 0 for A empty
  double total = 0.0;
  std::unique_ptr<Memo> clone() const override { return std::make_unique<MaxMemo>(*this); }
};
constexpr int kTile = 64;  // 64 x 64 doubles = 32 KiB per tile: source and target tiles stay in L1/L2

const double* checked_buffer(const double* data, int rows, int cols) {
  require(rows >= 0 && cols >= 0 && (data != nullptr || static_cast<long long>(rows) * cols == 0),
          "facility location: bad similarity buffer");
  return data;
}
}  // namespace

bool is_exactly_symmetric(const double* data, int n) {
  const auto at = [&](int r, int c) { return data[static_cast<std::ptrdiff_t>(r) * n + c]; };
  for (int r0 = 0; r0 < n; r0 += kTile)
    for (int c0 = r0; c0 < n; c0 += kTile) {
      const int r1 = std::min(n, r0 + kTile), c1 = std::min(n, c0 + kTile);
      for (int r = r0; r < r1; ++r)
        for (int c = std::max(c0, r + 1); c < c1; ++c)
          if (at(r, c) != at(c, r)) return false;
    }
  return true;
}

void transpose_blocked(const double* in, int rows, int cols, double* out) {
  for (int r0 = 0; r0 < rows; r0 += kTile)
    for (int c0 = 0; c0 < cols; c0 += kTile) {
      const int r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int r = r0; r < r1; ++r)  // reads contiguous: measured faster than writes contiguous
        for (int c = c0; c < c1; ++c)
          out[static_cast<std::ptrdiff_t>(c) * rows + r] = in[static_cast<std::ptrdiff_t>(r) * cols + c];
    }
}

FacilityLocation::FacilityLocation(Eigen::MatrixXd similarity)
    : owned_(std::move(similarity)), s_(owned_.data(), owned_.rows(), owned_.cols()) {
  init();
}

FacilityLocation::FacilityLocation(const double* data, int rows, int cols)
    : s_(checked_buffer(data, rows, cols), rows, cols) {
  init();
}

namespace {
// Where the column-major similarities of a row-major buffer live: the buffer itself when it is
// square and exactly symmetric, otherwise `copy`, filled by the blocked transpose.
const double* column_major_source(const double* data, int rows, int cols, Eigen::MatrixXd& copy) {
  checked_buffer(data, rows, cols);
  if (rows == cols && is_exactly_symmetric(data, rows)) return data;
  require_memory(
      static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * sizeof(double),
      "a column-major copy of the " + std::to_string(rows) + " x " + std::to_string(cols) + " similarity matrix");
  copy.resize(rows, cols);
  transpose_blocked(data, rows, cols, copy.data());
  return copy.data();
}
}  // namespace

FacilityLocation::FacilityLocation(RowMajor, const double* data, int rows, int cols)
    : s_(column_major_source(data, rows, cols, owned_), rows, cols) {
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
