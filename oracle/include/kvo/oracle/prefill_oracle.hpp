// The exact optimum of prefill compression, and kvpress's presses measured against it. A prompt
// of P tokens is compressed once to k keys per cache unit (layer, KV head); the queries P..n-1
// that follow attend the kept prompt keys plus every token after the prompt. Objective: the
// retained attention mass of those queries on the prompt keys, mean over the KV head's query
// group (objective M of the checks, summed over the following queries). It is modular, so the
// top-k of the per-key weights is exact and the LP dual certifies it (docs/presses.md).
#pragma once
#include <span>
#include <string>
#include <vector>

#include "kvo/core/press.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

struct PrefillUnit {
  int layer = 0, kv_head = 0, prompt_len = 0;
  std::vector<double> weight;  // [P]: w_j = sum_{t >= P} mean_group a(t, j), full causal attention
  double prompt_mass = 0.0;    // sum_j w_j: what keeping the whole prompt retains
  double decoded_mass = 0.0;   // sum_{t >= P} sum_{P <= j <= t} mean_group a(t, j): kept by every choice
  int queries = 0;             // n - P following queries
};

// Weights of one (layer, KV head): rows P..n-1 of each group head's attention, one row at a time
// (O(n (n - P) d) time, O(n) memory). kvo::Error unless 1 <= P < n.
PrefillUnit prefill_unit(const Trace& trace, int layer, int kv_head, int prompt_len);

struct PrefillOptimum {
  std::vector<int> set;  // the k heaviest prompt keys, ascending (ties: the earlier position)
  double value = 0.0;    // retained prompt mass of `set`
  double upper = 0.0;    // LP-dual bound k * lambda + sum_j max(0, w_j - lambda); equals value
  double lambda = 0.0;   // the dual price: the k-th largest weight
};
PrefillOptimum solve_prefill(const PrefillUnit& unit, int k);
// Retained prompt mass of a set of prompt positions (kvo::Error for a position outside the prompt).
double prefill_value(const PrefillUnit& unit, std::span<const int> set);

// One press on one unit at one compression ratio, against the optimum with the same k.
struct PressVsOptimum {
  PressId press = PressId::SnapKV;
  double compression_ratio = 0.0;
  int layer = 0, kv_head = 0, k = 0;
  double value = 0.0, optimum = 0.0;
  double fraction = 1.0;       // value / optimum (1 when the optimum is 0)
  double prompt_share = 1.0;   // value / prompt_mass: how much of the prompt's mass survives
  double optimum_share = 1.0;  // optimum / prompt_mass
  int overlap = 0;             // |press set ∩ optimal set|
};

struct PrefillComparisonOptions {
  int prompt_len = 0;
  std::vector<PressOptions> presses;  // each with its compression ratio
};
// Every press on every KV head of one layer (a press scores a whole layer at once: TOVA averages
// every query head); layers are independent (run on threads or ranks by the caller).
std::vector<PressVsOptimum> compare_presses(const Trace& trace, int layer, const PrefillComparisonOptions& options);

}  // namespace kvo
