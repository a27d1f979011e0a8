// The greedy scorer: replays the H2O family (H2O with a recent window, and the paper-exact
// Algorithm 2) for every (layer, query head) of a trace and several budgets in one pass, on a
// CUDA device or on the CPU twin that runs the same per-element math (scorer_math.hpp).
// Per step: logits q_i . k_j over the kept slots and the new key, softmax renormalised over them,
// scores accumulated, and while over budget the candidate with the smallest score leaves (the
// oldest on ties). Results equal the core replay engine's (same caches; scores to round-off).
#pragma once
#include <string>
#include <vector>

#include "kvo/core/budget.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

enum class ScorerVariant { H2O, Paper };  // "h2o" (also "h2o-realdrop") or "h2o-paper"
enum class ScorerDevice { Cpu, Cuda, Auto };
ScorerVariant parse_scorer_variant(const std::string& policy);  // kvo::Error for other policies
ScorerDevice parse_scorer_device(const std::string& name);      // "cpu", "cuda", "auto"

struct ScorerOptions {
  ScorerVariant variant = ScorerVariant::H2O;
  std::vector<Budget> budgets = {Budget()};  // several budgets in one pass
  int prompt_len = 0;
  std::vector<int> layers;  // empty: all
  ScorerDevice device = ScorerDevice::Auto;
  int threads = 0;  // CPU twin: <= 0 means all cores
};

struct ScorerUnit {
  int layer = 0, head = 0, budget_index = 0;
  ResolvedBudget budget;
  std::vector<int> evict_step;  // per token: the step it left the cache; -1: kept to the end
  std::vector<double> score;    // per token: its accumulated score when it left (or at the end)
};

struct ScorerResult {
  std::string device;             // "cpu twin (2 threads)" or the CUDA device's name
  std::vector<ScorerUnit> units;  // ordered by (budget, layer, head)
};

ScorerResult run_scorer(const Trace& trace, const ScorerOptions& options);

// The two back ends behind run_scorer (exposed for the tests that compare them).
ScorerResult run_scorer_cpu(const Trace& trace, const ScorerOptions& options);
ScorerResult run_scorer_cuda(const Trace& trace, const ScorerOptions& options);  // kvo::Error without a device

// The cache after step i (ascending tokens), from a unit's eviction steps.
std::vector<int> kept_after(const ScorerUnit& unit, int step);

// Work per step of one unit with `slots` keys of dimension d: flops of the logits (one fused
// multiply-add = 2 flops per element) and bytes the step moves: the keys (4 bytes each as the
// GPU reads them from the trace, 8 as the twin stores them), the fp32 query, fp64 scores read and
// written.
double scorer_flops_per_step(int slots, int d);
double scorer_bytes_per_step(int slots, int d, int key_bytes = 4);

}  // namespace kvo
