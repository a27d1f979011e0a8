// The exact prefill optimum when cache units share one budget: the KV heads of a layer (Ada-KV),
// the layers of the model with every head of a layer alike (PyramidKV's freedom) or every unit
// (a global top-k), with optional per-unit floors (Ada-KV's safeguard), against per-head budgets
// of the same total. The objective is the prefill oracle's retained prompt mass, summed over units.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/core/trace.hpp"
#include "kvo/oracle/allocation.hpp"
#include "kvo/oracle/allocation_methods.hpp"
#include "kvo/oracle/prefill_oracle.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

// One scope at one compression ratio: the optimum over every chosen unit with the same total.
struct SharedPrefillRow {
  BudgetScope scope = BudgetScope::Head;
  double compression_ratio = 0.0;
  int page_size = 1;            // b: slots are whole pages of b positions
  int k = 0;                    // the per-unit share in tokens: total = units * floor(k / b) * b
  int floor = 0;                // the floor in slots (per unit; per head of a layer in the layerwise scope)
  long total = 0;               // slots shared
  double value = 0.0;           // retained prompt mass summed over units (exact optimum)
  double upper = 0.0;           // the Lagrangian bound(s) summed: equals value (budget_allocation.hpp)
  double per_head_value = 0.0;  // the head scope's value at the same k in tokens (b = 1)
  double token_value = 0.0;     // this scope's value at the same k in tokens: value / token_value is what pages cost
  double prompt_mass = 0.0;     // the mass of every prompt key summed over units
  double gain = 1.0;            // value / per_head_value (1 when that is 0)
  int min_slots = 0, max_slots = 0;
  long at_floor = 0;       // units holding exactly the floor (while the floor is positive)
  std::vector<int> slots;  // per unit, layer-major in the chosen layers' order
};

struct SharedPrefillResult {
  int prompt_len = 0, following = 0, kv_heads = 0;
  std::vector<int> layers;
  std::vector<SharedPrefillRow> rows;        // ratio-major, then page size, then the request's scope order
  std::vector<AllocationMethodRow> methods;  // the request's presses (allocation_methods.hpp)
  nlohmann::json to_json(const std::string& trace) const;  // what `oracle allocation --json` writes
  // What `oracle allocation` shows (allocation_report.cpp): every scope's row with its gain and
  // certificate, the presses' split into keys and counts, and "allocation.svg", the gain against k / P.
  Report report(const AllocationRequest& request, const std::string& trace) const;
};

// The prefill protocol of `request` (its decoding fields are not read).
SharedPrefillResult run_shared_prefill(const Trace& trace, const AllocationRequest& request);

// Every unit's kept set under one scope's optimum at per-unit budget k, the same total as per-head
// budgets of k (units layer-major, kv_heads per layer, all of one prompt): the sets eval and tasks
// run in closed loop. The head scope gives solve_prefill's sets.
std::vector<std::vector<int>> shared_prefill_sets(const std::vector<PrefillUnit>& units, int kv_heads,
                                                  BudgetScope scope, int k);

// The kept prompt positions of one unit holding `slots` keys: its heaviest, ties to the earlier
// position (the same sets as solve_prefill at k = slots).
std::vector<int> shared_prefill_set(const PrefillUnit& unit, int slots);

}  // namespace kvo
