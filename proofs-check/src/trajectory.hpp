// Internal: what the trajectory checks share (main-text convention: S_i is the cache after step
// i, G_i = S_{i-1} ∪ {i}): the (1 - 1/e) line, sums of a weight row over a set, the UDC2 gammas of
// a per-step optimum series in both directions, and the induction's base step.
#pragma once
#include <algorithm>
#include <vector>

#include "head_data.hpp"

namespace kvo::detail {

inline double sum_over(const Eigen::MatrixXd& w, int i, const std::vector<int>& set) {
  double s = 0.0;
  for (int j : set) s += w(i, j);
  return s;
}

struct Gamma {
  double def = 0.0, proof = 0.0;
  long def_step = -1, proof_step = -1;
  std::vector<double> proof_at;  // per step
};
inline Gamma gammas(const std::vector<double>& opt, int from) {
  Gamma g;
  g.proof_at.assign(opt.size(), 0.0);
  for (int i = std::max(from, 1); i + 1 < static_cast<int>(opt.size()); ++i) {
    const double d = opt[i - 1] > 0 ? std::max(0.0, 1.0 - opt[i] / opt[i - 1]) : 0.0;
    const double p = opt[i + 1] > 0 ? std::max(0.0, 1.0 - opt[i] / opt[i + 1]) : 0.0;
    g.proof_at[static_cast<size_t>(i)] = p;
    if (d > g.def) g.def = d, g.def_step = i;
    if (p > g.proof) g.proof = p, g.proof_step = i;
  }
  return g;
}

// What the trajectory checks (check_udc, check_induction, check_robustness, check_ratio) share for
// one head, computed once: s0 = max(k, P - 1), the first step under budget pressure; the paper's
// threshold alpha / (10 n) at the most lenient alpha; the per-step optima of A and of h2o-paper's C.
struct Trajectory {
  int s0 = 0;
  double thr = 0.0;
  std::vector<double> optA, optC;    // top-k row sums of h.acc and of h2o-paper's scores (empty: none)
  const PolicyRun* paper = nullptr;  // h2o-paper's run, when replayed
};
Trajectory trajectory_of(const HeadData& h);

// First step of a run with exactly one eviction after the prompt (the induction's base step).
inline int base_step(const PolicyRun& run, int prompt_len) {
  for (int i = std::max(prompt_len, 0); i < static_cast<int>(run.replay.steps.size()); ++i)
    if (run.replay.steps[static_cast<size_t>(i)].evicted.size() == 1) return i;
  return -1;
}

}  // namespace kvo::detail
