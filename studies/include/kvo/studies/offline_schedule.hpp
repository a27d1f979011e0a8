// The schedules the offline policies of the closed loops (eval, tasks) follow, from the full-cache
// trace of the same input, per (layer, KV head) on the group's mean dense attention: `oracle` the
// end times maximising the retained attention mass under nested eviction (the offline optimum),
// `lookahead` those of h2o's rule on the attention of every query, future ones included. The
// optimum is solved without the n x n matrix (solve_offline_streaming on rows recomputed from q and
// k, on all cores: O(n (d + k)) memory); lookahead's rule reads the unit's dense matrix, 8 n^2 bytes.
#pragma once
#include <memory>

#include "kvo/core/budget.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/trace.hpp"

namespace kvo::studies {

// kvo::Error for a policy that is not offline.
std::shared_ptr<const ScheduleSource> offline_schedules(PolicyId id, const Trace& trace, const Budget& budget);

}  // namespace kvo::studies
