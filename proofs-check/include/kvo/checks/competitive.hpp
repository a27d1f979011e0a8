// Competitive ratios against the exact offline optimum of the nested problem (theory note §3.6,
// claim 19): per head, OPT_dyn (min-cost flow, with its dual certificate), the sum of per-step
// static optima, and each policy's value sum_i a_i(S_i) and ratio value / OPT_dyn. The ordering
// policy <= OPT_dyn <= sum_i opt_i must hold for nested policies (a violation is a kvoracle bug);
// the re-entering h2o-mask may exceed OPT_dyn, and its excess is reported as such.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kvo/core/replay.hpp"

namespace kvo {

struct PolicyRatio {
  std::string policy;
  bool nested = true;
  double value = 0.0;  // sum_i sum_{j in S_i} a(i, j)
  double ratio = 0.0;  // value / OPT_dyn
};

struct HeadCompetitive {
  int layer = 0, head = 0, k = 0;
  double opt_dyn = 0.0, dual_bound = 0.0, static_sum = 0.0;
  std::vector<PolicyRatio> policies;
  std::vector<std::string> violations;  // ordering or certificate failures (bugs)
};

struct CompetitiveOptions {
  std::vector<ReplayOptions> policies;  // one replay per policy (record_sets is forced on)
  int forced_window = 0;                // r forced into OPT_dyn's caches (0: the paper's problem)
  int threads = 0;
  std::function<void()> on_head_done;
};

std::vector<HeadCompetitive> competitive_ratios(const Trace& trace, const CompetitiveOptions& options);

}  // namespace kvo
