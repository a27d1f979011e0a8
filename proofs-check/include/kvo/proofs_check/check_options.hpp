// What `kvoracle verify` runs: the shared run configuration (budget, prompt, seed, layers, the
// policies' parameters), the policies to replay, the claim ids to check and each check's sizes.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/core/run_config.hpp"

namespace kvo {

struct TraceChecksOptions {
  // Budget, prompt, seed, layers and the policies' parameters (run.policy.id is set per policy);
  // one cache per query head (gqa must be query).
  RunConfig run;
  std::vector<PolicyId> policies = default_policies(PolicyListUse::Checks);
  std::set<std::string> checks;  // ids to run; empty: every claim of the papers in `claims`
  // Papers whose claims run (paper_catalogue() keys); empty: the papers of `checks`, else H2O's.
  std::set<std::string> claims;
  int samples = 120;      // sampled sets per scan (C5, C6, C12)
  int sampled_steps = 2;  // steps per head for the small-ground checks (C6-C8, C16, C20-C22)
  int ground = 12;        // small ground set (most recent keys) for brute force
  int small_k = 4;
  std::vector<double> sweep = {0.05, 0.1, 0.2, 0.3, 0.5};  // budgets of the retained-mass plot
  int sweep_heads = 1;                                     // heads per layer in the sweep (head (layer + t) mod H)
  // C19, D10 and the sweep's OPT_dyn solve the offline problem on the first min(n, offline_tokens)
  // steps, or on every step when 0 (column generation: a few attention passes and about n^2 / 2
  // floats of cost table per head in flight).
  int offline_tokens = 0;
  int loss_heads = 3;             // key matrices used as A in C23-C26 (first, middle, last layer)
  int loss_random = 8;            // random instances for C23-C26
  int power_law_bootstrap = 100;  // E2: synthetic samples of the power-law fit's p-value per head (0: none)
  int cooccurrence_window = 16;   // E3: tokens either side within which two words co-occur
  int threads = 0;
  std::function<void()> on_tick;  // progress: one tick per unit of work_units()

  // Refuses, with one line naming the option, what cannot run: ground outside [2, 16], small_k
  // outside [1, ground), samples, sampled_steps or sweep_heads below 1, offline_tokens 1 or negative,
  // loss_heads, loss_random or power_law_bootstrap below 0, cooccurrence_window below 1, a sweep
  // budget outside (0, 1], an unknown check id or paper, a check id of a paper `claims` leaves out,
  // no policy. TraceChecksPlan calls it.
  void validate() const;
};

// The sweep's budgets from their text: comma-separated fractions of n ("0.1" or "10%"), or "none"
// for no sweep. kvo::Error naming the sweep for a token count or an item that does not parse.
std::vector<double> parse_sweep(std::string_view text);
std::string sweep_text(const std::vector<double>& sweep);  // "0.05,0.1,0.2,0.3,0.5"; "none" when empty

// True when `id` runs: its paper is selected (o.claims, else the papers of o.checks, else H2O)
// and o.checks is empty or names it.
bool check_enabled(const TraceChecksOptions& o, const std::string& id);
// True when any claim of `paper` runs.
bool paper_enabled(const TraceChecksOptions& o, const std::string& paper);
// The papers' keys from their text ("snapkv,tova" or "all"); kvo::Error naming an unknown one.
std::set<std::string> parse_papers(std::string_view text);

}  // namespace kvo
