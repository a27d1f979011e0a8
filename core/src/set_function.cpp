#include "kvo/core/set_function.hpp"

#include <vector>

#include "kvo/core/error.hpp"

namespace kvo {

double SetFunction::evaluate(std::span<const int> set) const {
  auto memo = empty_memo();
  for (int j : set) add(*memo, j);
  return value(*memo);
}

std::vector<double> SetFunction::leave_one_out() const {
  const int n = ground_size();
  std::vector<double> out(static_cast<size_t>(n));
  std::vector<int> without(static_cast<size_t>(n > 0 ? n - 1 : 0));
  for (int v = 0; v < n; ++v) {
    for (int t = 0, o = 0; t < n; ++t)
      if (t != v) without[o++] = t;
    out[v] = evaluate(without);
  }
  return out;
}

void validate_set(std::span<const int> set, int n) {
  std::vector<char> seen(static_cast<size_t>(n), 0);
  for (int j : set) {
    require(j >= 0 && j < n,
            "set element " + std::to_string(j) + " is outside the ground set of size " + std::to_string(n));
    require(!seen[j], "set element " + std::to_string(j) + " appears twice");
    seen[j] = 1;
  }
}

}  // namespace kvo
