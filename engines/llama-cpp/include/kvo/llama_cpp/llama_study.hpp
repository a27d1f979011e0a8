// What kvoracle inside llama.cpp was measured to do (docs/llama.md): decode speed and llama.cpp's
// own memory accounting against its full cache in the same run, and each eviction decision against
// kvoracle's own decoder (EvictingDecoder) under the same contract, near ties counted.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kvo/llama_cpp/evicting_context.hpp"
#include "kvo/model/llama.hpp"

namespace kvo::llama_cpp {

struct LlamaSpeed {
  int tokens = 0, budget = 0, threads = 1;
  double full_tok_s = 0, evicting_tok_s = 0;  // median over the repetitions
  size_t full_state_bytes = 0, evicting_state_bytes = 0;
  int held = 0;  // positions the evicting cache holds at the end
  long evictions = 0;
  std::string render() const;  // a Markdown table row set, with the ratio
};

// Decodes `tokens` with llama.cpp's full cache and with `options` (its contract evicting), `reps`
// times each, alternating, in this process. The first options.contract.prompt_len tokens go in
// batches (prefill(), and the same batches for the full cache), the rest one at a time.
LlamaSpeed measure_speed(llama_model* model, const std::vector<int>& tokens, EvictingContextOptions options,
                         int reps = 1);

// A step where the two engines' decisions differ while both hold the same positions.
struct Departure {
  int step = 0;
  std::vector<int> kvoracle, llama;  // the positions each would evict
  // How close the choice was, in each engine's own scores: the relative excess of the other's
  // choice over its own (>= 0; infinity where the other's choice was not among its lowest candidates).
  double llama_gap = 0, kvoracle_gap = 0;
  bool near_tie = false;  // both gaps within the comparison's tolerance
};

struct DecisionComparison {
  int tokens = 0, budget = 0;
  double tolerance = 0;  // the gap under which a departure is a near tie
  long decisions = 0;    // steps at which the contract evicted
  long equal = 0;
  std::vector<Departure> departures;
  long near_ties = 0;
  // Where both chose the same, the two engines' summed scores of the evicted positions: the median
  // and largest relative difference (how far llama.cpp's quantised arithmetic moves the scores).
  double median_score_difference = 0, max_score_difference = 0;
  long beyond_tolerance() const { return static_cast<long>(departures.size()) - near_ties; }
  std::string render() const;
};

// Runs kvoracle's decoder on `reference` (the same GGUF loaded by kvoracle) under `options`'s
// contract and policy token by token, recording each decision, then llama.cpp on `model` under
// the same (the prompt, options.contract.prompt_len tokens, through prefill()), made to
// follow kvoracle's decisions (an EvictionSteer) so that both hold the same positions at every step;
// where llama.cpp's own choice differs, the departure is recorded with both engines' gaps. A
// departure is a near tie when both gaps are within `tolerance`; by default, within the largest
// difference between the two engines' scores of what both chose to evict on this run (llama.cpp's
// quantised arithmetic moves every score by about that much, so a closer choice may go either way).
// Scores are compared relatively where positive (h2o, tova), absolutely otherwise (scissorhands).
// kvo::Error where the engines disagree on when to evict (a contract or cache fault, not a near tie).
DecisionComparison compare_decisions(const model::Llama& reference, llama_model* model, const std::vector<int>& tokens,
                                     EvictingContextOptions options, std::optional<double> tolerance = std::nullopt);

}  // namespace kvo::llama_cpp
