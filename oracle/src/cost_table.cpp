#include "cost_table.hpp"

#include <algorithm>

namespace kvo::detail {

double CostTable::floats(int steps, const std::function<size_t(int)>& arrived, int every) {
  double floats = 0.0;
  for (int kept = std::min(every, steps) - 1;; kept = std::min(kept + every, steps - 1)) {
    floats += static_cast<double>(arrived(kept));
    if (kept == steps - 1) return floats;
  }
}

CostTable::CostTable(int steps, std::function<size_t(int step)> arrived, int stride, double cap_bytes) : steps_(steps) {
  if (steps <= 0 || cap_bytes <= 0.0) return;
  const auto fits = [&](int every) { return floats(steps, arrived, every) * sizeof(float) <= cap_bytes; };
  stride_ = std::min(stride > 0 ? stride : 1, steps);
  if (stride <= 0)  // strides 1..8, then doubling, up to one row
    while (!fits(stride_) && stride_ < steps) stride_ = std::min(stride_ < 8 ? stride_ + 1 : stride_ * 2, steps);
  if (!fits(stride_)) return;
  const int rows = (steps + stride_ - 1) / stride_;
  offset_.assign(static_cast<size_t>(rows) + 1, 0);
  for (int x = 0; x < rows; ++x)
    offset_[static_cast<size_t>(x) + 1] = offset_[static_cast<size_t>(x)] + arrived(checkpoint(x * stride_));
  floats_.resize(offset_.back());
}

int CostTable::checkpoint(int step) const { return std::min(steps_ - 1, step / stride_ * stride_ + stride_ - 1); }

void CostTable::clear() {
  floats_.clear();
  floats_.shrink_to_fit();
}

}  // namespace kvo::detail
