// The exact offline optimum under an engine's eviction contract (core/eviction_contract.hpp). Each
// contract reduces exactly to a problem the offline solvers certify: tied units add their rewards,
// sinks leave a shorter problem, a delay is a window, chunks are compression steps (docs/engines.md,
// "Why each reduction is exact").
#pragma once
#include <Eigen/Dense>
#include <functional>
#include <string>
#include <vector>

#include "kvo/core/eviction_contract.hpp"

namespace kvo {

struct ContractOptimum {
  double value = 0.0;                     // the kept sets' reward summed over their units and steps (sinks included)
  double upper = 0.0;                     // the dual bound: equals value when certified
  std::vector<std::vector<size_t>> sets;  // the units (layer-major) of each kept set
  std::vector<std::vector<int>> end;      // [set][token]: the last step it is held (j - 1: never)
  std::vector<double> set_value;          // [set]: its part of the value
  long long work = 0;                     // the solvers' augmentations
  bool certified() const;                 // upper - value within round-off of value
};

// The contract's optimum over layers x kv_heads units (layer-major) of n tokens; `unit_w(u)` gives
// unit u's rewards (w(i, j) >= 0 for j <= i), asked once per unit and dropped when its budget
// group is solved. Budget groups are solved on `threads` threads (<= 0: all cores), so unit_w
// must be safe to call for different units at once. kvo::Error from validate, or naming the unit
// whose matrix is not n x n.
ContractOptimum solve_contract(const std::function<Eigen::MatrixXd(size_t unit)>& unit_w, int n, int layers,
                               int kv_heads, const EvictionContract& contract, int threads = 1);

}  // namespace kvo
