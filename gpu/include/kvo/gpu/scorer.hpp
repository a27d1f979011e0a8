// The greedy scorer: replays the H2O family (H2O with a recent window, and the paper-exact
// Algorithm 2) for every (layer, query head) of a trace and several budgets in one pass, on a
// CUDA device or on the CPU twin that runs the same per-element math (scorer_math.hpp).
// Per step: logits q_i . k_j over the kept slots and the new key, softmax renormalised over them,
// scores accumulated, and while over budget the candidate with the smallest score leaves (the
// oldest on ties). Results equal the core replay engine's (same caches; scores to round-off).
#pragma once
#include <string>
#include <vector>

#include "kvo/core/run_config.hpp"
#include "kvo/core/trace.hpp"
#include "kvo/gpu/scorer_result.hpp"

namespace kvo {

enum class ScorerDevice { Cpu, Cuda, Auto };
ScorerDevice parse_scorer_device(const std::string& name);  // "cpu", "cuda", "auto"

struct ScorerOptions {
  // The policy (its ScorerVariant trait picks the kernel), the budget, prompt, layers and heads; the
  // scorer keeps one cache per query head (gqa must be query).
  RunConfig run;
  // Several budget totals in one pass, each with run.budget's recent part and overrides; empty:
  // run.budget alone.
  std::vector<Amount> totals;
  ScorerDevice device = ScorerDevice::Auto;
  int threads = 0;  // CPU twin: <= 0 means all cores

  // The budgets of the pass, in order (ScorerUnit::budget_index refers to them).
  std::vector<Budget> budgets() const;
  // The kernel of the run's policy; kvo::Error naming the policies the scorer replays.
  ScorerVariant variant() const;
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
