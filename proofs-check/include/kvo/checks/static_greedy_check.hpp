// Theorem check (Nemhauser-Wolsey-Fisher 1978; Leskovec et al. 2007): at sampled steps, lazy
// greedy on a monotone submodular facility-location objective (clients: the last `window`
// queries' dense attention; candidates: the keys the policy's query attended) reaches
// >= (1 - (1 - 1/k)^k) * OPT, and its a-posteriori bound is >= OPT, with OPT from the exact
// solver. A failure is a bug in kvoracle.
#pragma once
#include <vector>

#include "kvo/core/replay.hpp"

namespace kvo {

struct StaticGreedySample {
  int layer = 0, head = 0, step = 0, ground = 0, k = 0;
  double greedy = 0.0, opt = 0.0, bound = 0.0, factor = 0.0;
  bool exact = false;
  bool holds = true;
};

struct StaticGreedyOptions {
  int budget = 8;            // k of the static problem
  int window = 16;           // client queries
  int samples_per_head = 4;  // evenly spaced steps
  int max_ground = 48;       // candidates: the most recent attended keys, at most this many
  int threads = 0;
};

std::vector<StaticGreedySample> static_greedy_check(const Trace& trace, const ReplayResult& replay,
                                                    const StaticGreedyOptions& options);

}  // namespace kvo
