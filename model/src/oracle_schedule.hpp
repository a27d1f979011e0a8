// The offline optimum's schedules for the oracle-guided policy of the closed loops (eval, tasks):
// per (layer, KV head), the end times maximising the retained attention mass (the group's mean
// dense attention) under nested eviction, from the full-cache trace of the same input.
#pragma once
#include <memory>

#include "kvo/core/budget.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/trace.hpp"

namespace kvo::model {

std::shared_ptr<const ScheduleSource> oracle_schedules(const Trace& trace, const Budget& budget);

}  // namespace kvo::model
