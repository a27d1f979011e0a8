#include "kvo/scaleout/plan_runner.hpp"

#include "kvo/scaleout/team.hpp"
#include "kvo/scaleout/unit_runner.hpp"

namespace kvo::scaleout {

std::optional<std::vector<std::string>> run_plan_units(const WorkUnits& plan, const PlanRunOptions& options) {
  UnitPlan units{options.section, {}, {}};
  for (int u = 0; u < plan.size(); ++u) {
    units.names.push_back(plan.name(u));
    units.cost.push_back(plan.cost(u));
  }
  std::vector<std::string> out = run_units(units, [&plan](int u) { return plan.run_bytes(u); },
                                           {options.threads, options.checkpoint, options.on_unit});
  if (!Team::world().root()) return std::nullopt;
  return out;
}

}  // namespace kvo::scaleout
