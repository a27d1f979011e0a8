// What the greedy scorer returns per cache unit: when each token left and its score then. Plain
// C++17 so that the CUDA back end (compiled by nvcc as C++17) shares it with the host.
#pragma once
#include <string>
#include <vector>

#include "kvo/core/budget.hpp"

namespace kvo {

struct ScorerUnit {
  int layer = 0, head = 0, budget_index = 0;
  ResolvedBudget budget;
  std::vector<int> evict_step;  // per token: the step it left the cache; -1: kept to the end
  std::vector<double> score;    // per token: its accumulated score when it left (or at the end)
};

struct ScorerResult {
  std::string device;             // "cpu twin (2 threads)" or the CUDA device's name
  std::vector<ScorerUnit> units;  // ordered by (budget, layer, head)
  double kernel_seconds = 0.0;    // CUDA: the kernel alone (events), without packing and copies
};

}  // namespace kvo
