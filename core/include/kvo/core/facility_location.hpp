// Facility location over a window of queries: FL(T) = sum_r max_{j in T} s(r, j), with the max
// over the empty set = 0. With s >= 0 it is monotone and submodular by construction. For
// attention, s(r, j) = a_{r,j} over the last w queries r (docs/theory.md §2.0, objective E).
#pragma once
#include <Eigen/Dense>

#include "kvo/core/set_function.hpp"

namespace kvo {

class FacilityLocation final : public SetFunction {
 public:
  // similarity: rows are the "clients" r (queries), columns the ground set j (keys).
  explicit FacilityLocation(Eigen::MatrixXd similarity);
  // A view of the caller's column-major rows x cols buffer, without a copy: the buffer must
  // outlive this object (the Python bindings hand Fortran-ordered numpy arrays in this way).
  FacilityLocation(const double* data, int rows, int cols);
  // The caller's row-major (C-ordered) buffer: read in place when it is square and exactly
  // symmetric (its column-major reading is then the same matrix), otherwise copied once into
  // column-major storage by a cache-blocked transpose (refused by require_memory if it cannot fit).
  struct RowMajor {};
  FacilityLocation(RowMajor, const double* data, int rows, int cols);
  FacilityLocation(const FacilityLocation&) = delete;  // s_ may point into owned_
  FacilityLocation& operator=(const FacilityLocation&) = delete;

  // True when the similarities are read from the caller's buffer, false when held in a copy (or
  // when there are none).
  bool borrows_buffer() const { return s_.data() != owned_.data(); }

  int ground_size() const override { return static_cast<int>(s_.cols()); }
  SetFnTraits traits() const override;
  std::unique_ptr<Memo> empty_memo() const override;
  double gain(const Memo& memo, int j) const override;
  void add(Memo& memo, int j) const override;
  double value(const Memo& memo) const override;

 private:
  void init();
  Eigen::MatrixXd owned_;
  Eigen::Map<const Eigen::MatrixXd> s_;  // owned_ (declared first) or the caller's buffer
  bool nonnegative_ = true;
};

// Whether the n x n row-major buffer equals its transpose bit for bit (+0.0 == -0.0 aside);
// compares in cache-sized tiles and stops at the first difference.
bool is_exactly_symmetric(const double* data, int n);

// out (cols x rows, row-major; equivalently rows x cols column-major) = the transpose of the
// rows x cols row-major `in`, in cache-sized tiles.
void transpose_blocked(const double* in, int rows, int cols, double* out);

}  // namespace kvo
