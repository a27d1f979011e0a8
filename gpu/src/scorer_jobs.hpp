// Internal: the cache units of a scorer run, one per (budget, layer, query head), validated
// before any work (the trace must carry queries and keys; every budget must resolve), and the
// CUDA back end that replays them. Plain C++17: nvcc compiles the back end as C++17.
#pragma once
#include <vector>

#include "kvo/core/trace.hpp"
#include "kvo/gpu/scorer_result.hpp"

namespace kvo {

struct ScorerJob {
  int layer = 0, head = 0, budget_index = 0;
  ResolvedBudget budget;
  int capacity = 0;  // slots: max(budget, prompt) + 1, rounded up to whole blocks of 8
};

struct ScorerOptions;
std::vector<ScorerJob> scorer_jobs(const Trace& trace, const ScorerOptions& options);

// The CUDA back end on validated jobs (paper: Algorithm 2's variant, no recent window).
ScorerResult run_scorer_cuda_jobs(const Trace& trace, const std::vector<ScorerJob>& jobs, int prompt_len, bool paper);

}  // namespace kvo
