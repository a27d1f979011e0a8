// Check "greedy vs the static optimum" (theory note §2.9, claim 15): along a policy's replay, the
// per-step ratio rho_i = f(S_i) / max_{|S| <= k, S ⊆ [i]} f(S) for the dense accumulated
// objective f = h(sum_{j in S} A_i(j)), against the (1 - 1/e) line. A finding, not a theorem:
// an online policy may fall below the line on real traces.
#pragma once
#include <vector>

#include "kvo/core/concave.hpp"
#include "kvo/core/replay.hpp"

namespace kvo {

struct RatioStats {
  int steps = 0;  // steps with a cache under budget pressure (i >= max(k, P - 1))
  double min = 1.0;
  double median = 1.0;
  double mean = 1.0;
  int worst_step = -1;
  int below_line = 0;  // steps with rho < 1 - 1/e
};
RatioStats summarize_ratios(const std::vector<double>& rho, int first_step);

struct HeadRatio {
  int layer = 0, head = 0;
  ResolvedBudget budget;
  std::vector<double> rho;  // per step (1 before the cache is full)
  RatioStats stats;
  double mean_retained_mass = 0.0;
};

struct GreedyVsStatic {
  std::string policy;
  Concave h = Concave::Identity;
  std::vector<HeadRatio> heads;
};

// Needs the replay's kept sets (ReplayOptions::record_sets).
GreedyVsStatic greedy_vs_static(const Trace& trace, const ReplayResult& replay, Concave h, int prompt_len,
                                int threads = 0);

}  // namespace kvo
