// Several replays of one trace in a single pass: each query head's attention row is computed once
// per step and handed to every replay's policies, whose budget groups (shared budgets, contracts)
// step in lockstep. What `oracle contract` runs for every policy under every contract: one attention
// pass instead of one per (contract, policy).
#pragma once
#include <functional>
#include <vector>

#include "kvo/core/replay.hpp"

namespace kvo {

// Each replay's schedule per cache unit, as end steps: ends[r][u][j] is the last step after which
// unit u of replay r still held token j (n - 1: never evicted), where u = layer * kv_heads + KV head.
using UnitEndSteps = std::vector<std::vector<std::vector<int>>>;

// One replay() result (kv-mean or kv-max units) in the same form: ends[u][j] from the first query
// head of each KV group, whose records its group shares.
std::vector<std::vector<int>> end_steps_of(const Trace& trace, const ReplayResult& result);

// Every option on the whole trace (no layer or head selection) with (layer, KV head) units
// (run.gqa kv-mean or kv-max), each as replay() would run it: the same end steps, bit for bit, as
// end_steps_of(replay()) of that option alone. `on_step` (optional) is called after every step,
// never from two threads at once. kvo::Error for an option replay() refuses, per-query-head units,
// a selection, a policy that reads the dense n x n attention, or a policy that re-admits evicted
// tokens (no end step describes it).
UnitEndSteps replay_end_steps(const Trace& trace, const std::vector<ReplayOptions>& options, int threads = 0,
                              const std::function<void(int step)>& on_step = {});

}  // namespace kvo
