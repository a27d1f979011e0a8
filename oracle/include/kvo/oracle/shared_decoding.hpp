// The exact offline optimum of irreversible eviction (retained dense attention mass, every step)
// when cache units share one capacity: the KV heads of each layer, or every (layer, KV head),
// against per-unit budgets of the same total (`oracle allocation --protocol decoding`).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/trace.hpp"
#include "kvo/oracle/allocation.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

// One unit's problem: w(i, j) = the mean over the KV head's query group of the attention a(i, j).
OfflineProblem decoding_unit(const Trace& trace, int layer, int kv_head, int budget, int recent);

struct SharedDecodingRow {
  BudgetScope scope = BudgetScope::Head;
  int k = 0, recent = 0;        // per unit; the units of a sharing set hold H (k - r) heavy slots together
  int interval = 0;             // periodic compression every N steps to the target k; 0: every step
  int page_size = 1;            // b: whole aligned pages of b positions evicted together (offline_pages.hpp)
  double value = 0.0;           // retained mass summed over units and steps (exact optimum)
  double upper = 0.0;           // the dual bounds summed: equals value when certified
  double per_head_value = 0.0;  // the head scope's value: every unit its own k (same page size)
  double token_value =
      0.0;                  // this scope's value in single tokens at the same k: value / token_value is what pages cost
  double total_mass = 0.0;  // what keeping every token would retain
  double gain = 1.0;        // value / per_head_value
  int min_held = 0, max_held = 0;  // tokens a unit holds after the last step (window included)
  long long work = 0;              // augmentations
  // Periodic rows: the same scope's optimum when the cache is compressed after every decoding
  // step, its queries seeing as many tokens as the periodic cache's peak (k + N) or mean
  // (k + (N + 1) / 2), at most n; same prompt and window.
  int peak_k = 0, mean_k = 0;
  double peak_value = 0.0, mean_value = 0.0;
  double peak_upper = 0.0, mean_upper = 0.0;  // their dual bounds: equal to the values when certified
};

struct SharedDecodingResult {
  int n = 0, kv_heads = 0;
  std::vector<int> layers;
  std::vector<SharedDecodingRow> rows;  // budget-major, then page size, then the request's scope order
  nlohmann::json to_json(const std::string& trace) const;
  // What `oracle allocation --protocol decoding` shows (allocation_report.cpp): every row with its
  // ratios and certificate, and "allocation.svg", the gain (or, periodic, the ratio to every-step
  // compression at the peak size) against the budget.
  Report report(const AllocationRequest& request, const std::string& trace) const;
};

// The decoding protocol of `request` (validated: head, layer and model scopes; no floor): eviction
// at every step at each budget, in tokens and in whole pages of each page size (offline_pages.hpp),
// or, with intervals, periodic compression to each target (offline_periodic.hpp) at every interval.
// Dense: n x n doubles per unit, and the solver's suffix sums per sharing set; with column
// generation (request.solver), O(n (d + candidates)) per unit of the sharing sets solved at once.
SharedDecodingResult run_shared_decoding(const Trace& trace, const AllocationRequest& request);

}  // namespace kvo
