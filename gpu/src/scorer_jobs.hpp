// Internal: the cache units of a scorer run, one per (budget, layer, query head), validated
// before any work (the trace must carry queries and keys; every budget must resolve).
#pragma once
#include <vector>

#include "kvo/gpu/scorer.hpp"

namespace kvo {

struct ScorerJob {
  int layer = 0, head = 0, budget_index = 0;
  ResolvedBudget budget;
  int capacity = 0;  // slots: max(budget, prompt) + 1, rounded up to whole blocks of 8
};

std::vector<ScorerJob> scorer_jobs(const Trace& trace, const ScorerOptions& options);

}  // namespace kvo
