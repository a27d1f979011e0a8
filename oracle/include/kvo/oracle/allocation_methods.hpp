// kvpress's presses that allocate a budget, against the exact optimum of the same memory on a
// trace's prompt: each press alone (per-head counts; PyramidKV's pyramid of layer counts), under
// AdaKVPress (a layer's KV heads share its budget above a safeguard) and under
// PerLayerCompressionPress (the caller's ratio per layer). Each row splits what the
// press loses into its choice of keys at its own counts and its counts against its scope's best.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/press.hpp"
#include "kvo/oracle/allocation.hpp"

namespace kvo {

struct AllocationMethodRow {
  std::string method;  // "snapkv", "adakv(snapkv, 0.2)"
  PressId press = PressId::SnapKV;
  double alpha_safeguard = -1;  // AdaKV's; negative: the press alone
  double compression_ratio = 0;
  int k = 0;                                  // kvpress's per-head count at this ratio (press_n_kept)
  BudgetScope scope = BudgetScope::Head;      // where its counts move: head, layerwise (pyramidkv), layer (AdaKV)
  int floor = 0;                              // AdaKV's safeguard n_safe per head; 0 for a press alone
  long total = 0;                             // slots it holds, summed over units
  double value = 0;                           // retained prompt mass of its kept sets, summed over units
  double at_counts = 0;                       // the optimum at its counts: each unit's heaviest `slots` keys
  double scope_optimum = 0, scope_upper = 0;  // its scope's optimum at its total (and floor), with its bound
  double best = 0, best_upper = 0;            // the model scope's optimum at its total: any allocation
  double per_head = 0;                        // per-head budgets of k: the head scope's optimum
  double prompt_mass = 0;
  int min_slots = 0, max_slots = 0;
  std::vector<int> slots;  // per unit, layer-major
};

// The rows of request.presses x request.ratios (each press alone, then under AdaKV at each
// alpha_safeguard), ratio-major; then, with layer_ratios, each press under PerLayerCompressionPress
// ("per-layer(snapkv)"; its compression_ratio and k are the mean ratio's). weights[u]: the prefill
// weights of unit u (layer-major over `layers`, kv heads per layer), as run_shared_prefill computes.
std::vector<AllocationMethodRow> compare_allocation_methods(const Trace& trace, const AllocationRequest& request,
                                                            const std::vector<int>& layers,
                                                            const std::vector<std::vector<double>>& weights);

nlohmann::json to_json(const AllocationMethodRow& row);

}  // namespace kvo
