// Internal: column generation's cost table (docs/oracle.md §3d): the pairs' costs L_j(t) rounded
// to float, kept on every stride-th eviction step (the last step of each stride, and the last
// step). A step reads the row of the next kept step: L only falls along a column (the weight rows
// are not negative), so that row bounds the step's costs from below. Tested alone by
// tests/oracle/column_generation_test.cpp.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

namespace kvo::detail {

class CostTable {
 public:
  // `steps` eviction steps, step s having `arrived(s)` columns (non-decreasing). stride > 0: that
  // stride; otherwise the smallest of 1..8, then doubling up to one row, whose rows fit in
  // `cap_bytes`. The table stays empty when no stride fits, cap_bytes <= 0, or there is no step.
  CostTable(int steps, std::function<size_t(int step)> arrived, int stride, double cap_bytes);

  bool empty() const { return floats_.empty(); }
  int stride() const { return stride_; }
  long long bytes() const { return static_cast<long long>(floats_.size() * sizeof(float)); }
  // The kept step whose row step `step` reads.
  int checkpoint(int step) const;
  const float* row(int step) const { return floats_.data() + offset_[static_cast<size_t>(step / stride_)]; }
  float* row(int step) { return floats_.data() + offset_[static_cast<size_t>(step / stride_)]; }
  void clear();  // drops the rows (costs beyond what a float can bound)

  // The floats a table on every `every`-th step holds: what the stride choice weighs.
  static double floats(int steps, const std::function<size_t(int)>& arrived, int every);

 private:
  int steps_, stride_ = 1;
  std::vector<size_t> offset_;
  std::vector<float> floats_;
};

}  // namespace kvo::detail
