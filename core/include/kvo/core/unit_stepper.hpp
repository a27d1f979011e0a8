// One eviction policy driven step by step over one cache unit, with each step's attention rows
// supplied by the caller: replay() computes the rows per unit, the checks compute them once per
// step and drive every policy in lockstep (so a head costs one attention pass, not one per policy).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kvo/core/policy.hpp"
#include "kvo/core/run_config.hpp"

namespace kvo {

struct StepRecord;

// Query i of one query head over the whole prefix [0, i].
struct HeadRow {
  std::span<const double> logits;  // scaled q_i . k_j (or log a_ij for dense traces)
  std::span<const double> dense;   // a(i, j): the softmax of logits
  std::span<const double> acc;     // A_i(j) = sum_{r = j..i} a(r, j)
};

// The setup of one cache unit under `run`: n, the unit's budget, the prompt, the seed, the unit
// (layer, head) and its first query head's view; `dense` is left to the caller.
PolicySetup unit_setup(const RunConfig& run, int n, int layer, int unit_head, std::uint64_t seed, const HeadView& head);

class UnitStepper {
 public:
  // setup.budget, prompt_len, seed, layer and head come from the caller (replay's unit or a
  // check's head); the policy is built from run.policy.
  UnitStepper(const RunConfig& run, const PolicySetup& setup, int heads, bool record_sets, bool record_probs);
  // Step i: asks the policy what query i attends, hands it the probabilities renormalised over
  // that set (aggregated over the unit's heads by run.gqa), and writes head x's record to out[x].
  void step(int i, std::span<const HeadRow> rows, std::span<StepRecord> out);
  // step() in two halves, for units that share a budget: observe() feeds the policy; after the
  // group settled its evictions, record() writes the records.
  void observe(int i, std::span<const HeadRow> rows);
  void record(int i, std::span<const HeadRow> rows, std::span<StepRecord> out);
  const EvictionPolicy& policy() const { return *policy_; }
  EvictionPolicy& policy() { return *policy_; }

 private:
  RunConfig run_;
  std::unique_ptr<EvictionPolicy> policy_;
  bool record_sets_, record_probs_;
  std::vector<char> was_;  // membership marks of S_{i-1} ∪ {i}
  std::vector<int> prev_, att_;
  std::vector<double> lg_, agg_;
  std::vector<std::vector<double>> probs_;
};

}  // namespace kvo
