// Replay's units (a cache unit: one query head, or a KV head's query group) and how one budget
// group of them is set up: each unit's policy stepper and the group's settler. Shared by replay()
// (one group at a time) and replay_end_steps() (every replay's groups in lockstep).
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <memory>
#include <vector>

#include "kvo/core/attention.hpp"
#include "kvo/core/contract_group.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/shared_budget.hpp"
#include "kvo/core/unit_stepper.hpp"

namespace kvo::replay_detail {

// One cache: a query head, or a KV head whose query heads share it.
struct CacheUnit {
  int layer;
  int budget_head;         // index used for per-head budget overrides
  std::vector<int> heads;  // query heads sharing the cache
  std::uint64_t index;     // its place among all units: the seed offset
};

// The units replayed together: one unit, or the units that share a budget, which step in lockstep.
struct Unit {
  std::vector<CacheUnit> members;
};

// Who replays together: the contract's budget groups, or the units sharing run.budget_scope.
BudgetScope grouping(const ReplayOptions& o);

// The options as replay runs them: validated against the trace (kvo::Error before any work), and
// under a contract the run the contract leaves each unit (run_under_contract).
ReplayOptions prepared(const Trace& trace, ReplayOptions o);

// Every unit of a prepared run, in groups.
std::vector<Unit> make_units(const Trace& trace, const ReplayOptions& o);

// Whether a group's units settle their evictions together (a shared budget or a contract).
bool settles_together(const ReplayOptions& o);

// Unit u's policy stepper; `heads` are its query heads' views (the first one goes to the policy),
// `dense` the averaged dense attention for policies that need it (else null). Its budget in *budget.
std::unique_ptr<UnitStepper> make_stepper(const ReplayOptions& o, const CacheUnit& u,
                                          const std::vector<HeadView>& heads, int n, const Eigen::MatrixXd* dense,
                                          ResolvedBudget* budget);

// What settles a group's evictions after its units observed a step: a shared budget, a contract,
// or nothing (units alone).
class GroupSettler {
 public:
  GroupSettler(const ReplayOptions& o, const Unit& g, std::vector<EvictionPolicy*> policies, int n);
  void settle(int i);

 private:
  std::unique_ptr<SharedBudgetGroup> group_;
  std::unique_ptr<ContractGroup> contract_;
};

}  // namespace kvo::replay_detail
