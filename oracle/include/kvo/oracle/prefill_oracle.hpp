// The exact optimum of prefill compression, and kvpress's presses measured against it. A prompt
// of P tokens is compressed once to k keys per cache unit (layer, KV head); the queries P..n-1
// that follow attend the kept prompt keys plus every token after the prompt. Objective: the
// retained attention mass of those queries on the prompt keys, mean over the KV head's query
// group (objective M of the checks, summed over the following queries). It is modular, so the
// top-k of the per-key weights is exact and the LP dual certifies it (docs/presses.md).
//
// Output fidelity (docs/presses.md, "Output fidelity"): E(S) = mean_group sum_{t >= P} |o_t(S) - o_t|_2,
// the error of the attention outputs when only S of the prompt (and every token after it) is kept.
// E is neither modular nor submodular, and its exact minimiser is not computed. Exact here: E of any
// set, and the minimiser of the bound E(S) <= B(S) = sum_{j < P, j not in S} u_j with
//   u_j = mean_group sum_{t >= P} a(t, j) R_j(t),   R_j(t) = max_{i <= t} |v_i - v_j|_2,
// which holds because o_t(S) - o_t = (1 - m_t(S)) (o_t(S) - o_t(dropped)) and the dropped keys' mean
// lies within sum_j beta_j R_j(t) of any mean of kept values. B is modular: its minimiser is a top-k.
#pragma once
#include <cmath>
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
  // Output fidelity's bound weights u_j [P] and their sum B(empty); empty when the layer has no values.
  std::vector<double> bound_weight;
  double bound_total = 0.0;
};

// Weights of one (layer, KV head): rows P..n-1 of each group head's attention, one row at a time
// (O(n (n - P) d) time, O(n) memory). kvo::Error unless 1 <= P < n. With `output_bound` and values in
// the layer, also the bound weights u_j (O(P^2 d) once and O((n - P) P d) per group head more).
PrefillUnit prefill_unit(const Trace& trace, int layer, int kv_head, int prompt_len, bool output_bound = true);

struct PrefillOptimum {
  std::vector<int> set;  // the k heaviest prompt keys, ascending (ties: the earlier position)
  double value = 0.0;    // retained prompt mass of `set`
  double upper = 0.0;    // LP-dual bound k * lambda + sum_j max(0, w_j - lambda); equals value
  double lambda = 0.0;   // the dual price: the k-th largest weight
};
PrefillOptimum solve_prefill(const PrefillUnit& unit, int k);
// Retained prompt mass of a set of prompt positions (kvo::Error for a position outside the prompt).
double prefill_value(const PrefillUnit& unit, std::span<const int> set);

// The set of k prompt keys minimising the output bound B: the k largest u_j (same tie rule). Its
// `value` is the u kept and `upper` the LP-dual bound on it, so min B = bound_total - value is
// certified by bound_total - upper. kvo::Error when the unit has no bound weights.
PrefillOptimum solve_output_bound(const PrefillUnit& unit, int k);
// B(set) = bound_total - sum_{j in set} u_j.
double output_bound(const PrefillUnit& unit, std::span<const int> set);
// E(set) for each set (ascending prompt positions) of one (layer, KV head), in one blocked pass over
// rows P..n-1 of the group's attention: O((n - P)(n + sum |S|) d) time, O(64 (P + d) + n d) memory.
// Kept keys are renormalised as a decoder does: o_t(S) = softmax over S and P..t.
std::vector<double> output_errors(const Trace& trace, int layer, int kv_head, int prompt_len,
                                  std::span<const std::vector<int>> sets);

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
  // Output fidelity (NaN when the trace has no values or the comparison skips it):
  double output_error = NAN;         // E(press set)
  double output_bound = NAN;         // B(press set) >= output_error
  double mass_optimum_error = NAN;   // E of the mass optimum with the same k
  double bound_optimum_error = NAN;  // E of B's minimiser with the same k
  double bound_optimum_bound = NAN;  // min B over k keys (>= bound_optimum_error)
};

struct PrefillComparisonOptions {
  int prompt_len = 0;
  std::vector<PressOptions> presses;  // each with its compression ratio
  bool output_fidelity = true;        // E and B per record (when the trace has values)
};
// Every press on every KV head of one layer (a press scores a whole layer at once: TOVA averages
// every query head); layers are independent (run on threads or ranks by the caller).
std::vector<PressVsOptimum> compare_presses(const Trace& trace, int layer, const PrefillComparisonOptions& options);

}  // namespace kvo
