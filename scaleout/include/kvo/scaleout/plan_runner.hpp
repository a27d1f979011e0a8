// Runs a work plan (kvo/core/work_plan.hpp) over the team: every rank takes part, units go out
// largest first, a checkpoint stores finished units; rank 0 alone gets the assembled result, so
// what a command prints after it runs on rank 0 without asking the team.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/work_plan.hpp"

namespace kvo::scaleout {

class Checkpoint;

struct PlanRunOptions {
  std::string section = "t0";              // the checkpoint's folder for this plan (one per call)
  int threads = 1;                         // worker threads on each rank
  const Checkpoint* checkpoint = nullptr;  // rank 0: stores finished units, reuses stored ones
  std::function<void()> on_unit;           // rank 0: once per unit, resumed units included
};

// Collective: every rank calls it with the same plan. Rank 0: every unit's bytes in unit order;
// the other ranks: nothing. Errors as run_units (unit_runner.hpp).
std::optional<std::vector<std::string>> run_plan_units(const WorkUnits& plan, const PlanRunOptions& options);

template <class Result>
std::optional<Result> run_plan(const WorkPlan<Result>& plan, const PlanRunOptions& options) {
  std::optional<std::vector<std::string>> bytes = run_plan_units(plan, options);
  if (!bytes) return std::nullopt;
  return plan.assemble_bytes(*bytes);
}

}  // namespace kvo::scaleout
