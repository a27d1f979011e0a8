// Budgets shared across cache units: who shares (the scope table) and the request of `kvoracle
// oracle allocation` and kvoracle.allocation_oracle, for both protocols (prefill compression,
// decoding eviction), declared once in AllocationRequest::schema().
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvo/core/budget_scope.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

// Prefill: the prompt compressed once, scored by the queries after it (shared_prefill.hpp).
// Decoding: irreversible eviction at every step, the offline optimum (offline_shared.hpp).
enum class AllocationProtocol { Prefill, Decoding };
std::string to_string(AllocationProtocol protocol);
AllocationProtocol parse_allocation_protocol(std::string_view name);  // kvo::Error naming the known ones

// How the decoding protocol solves eviction at every step: the dense assignment on each unit's
// n x n weights (solve_offline_shared), or column generation over rows recomputed from the trace's
// q and k (solve_offline_shared_streaming); both exact and certified.
enum class DecodingSolver { Dense, ColumnGeneration };
std::string to_string(DecodingSolver solver);
DecodingSolver parse_decoding_solver(std::string_view name);  // kvo::Error naming the known ones

struct AllocationRequest {
  AllocationProtocol protocol = AllocationProtocol::Prefill;
  // Prefill:
  int prompt_len = 0;                            // P: the prompt compressed once; queries P..n-1 follow
  std::vector<double> ratios = {0.5, 0.8, 0.9};  // kvpress's compression_ratio: k = max(1, int(P (1 - r)))
  // Empty: the protocol's default (chosen_scopes()): prefill every scope; decoding head and layer
  // (the model scope's dense solve over every unit is opt-in).
  std::vector<BudgetScope> scopes;
  // The least any unit keeps (a layer, in the layerwise scope): tokens ("8") or a share of the
  // per-unit budget k ("20%", "0.2"; Ada-KV's alpha_safeguard). "0": no floor.
  std::string floor = "0";
  // Page sizes b (powers of two, at most every k): the cache evicts whole aligned pages of b
  // positions (the last one may be short) and keeps floor(k / b) pages per unit. 1: tokens.
  // Decoding: a page is allocated when its first token arrives and the newest pages that the last
  // r tokens can span are the window (offline_pages.hpp); not with intervals.
  std::vector<int> page_sizes = {1};
  // kvpress presses whose allocations are measured against the optimum of the same memory
  // (allocation_methods.hpp; comma-separated, "all", or empty: none), each alone and under
  // AdaKVPress at every alpha_safeguard in [0, 1]; `press` holds their parameters.
  std::string presses;
  std::vector<double> alpha_safeguard;
  // kvpress's PerLayerCompressionPress around each of presses: one compression_ratio per chosen
  // layer, in the order of chosen_layers(); empty: no such rows.
  std::vector<double> layer_ratios;
  PressOptions press;
  // Decoding: each unit's budgets k (tokens, or shares of n: the amounts of every budget list; empty: 20%) and
  // forced recent window r (tokens, or a share of k); the units of a scope share their heavy slots,
  // each keeping its own window.
  std::vector<std::string> budgets;
  std::string recent = "0";
  // Decoding, periodic compression instead of eviction at every step (kvpress's DecodingPress):
  // after the query of every N-th step after the first prompt_len steps, each unit's cache is
  // compressed to a target T (amounts, as budgets), for every N in `intervals`.
  std::vector<int> intervals;
  std::vector<std::string> targets;
  DecodingSolver solver = DecodingSolver::Dense;  // eviction at every step (not periodic compression)
  std::vector<int> layers;                        // empty: all; the model scope shares the budget over these
  int threads = 0;
  std::function<void()> on_unit;  // progress: once per (layer, KV head) weighed (any thread)

  // kvo::Error naming the option, before any work. Prefill: prompt_len outside [1, n - 1], a ratio
  // outside [0, 1), a floor that is not an amount or exceeds some ratio's per-unit budget k (the
  // floors would sum past the total), a page size that is not a power of two or exceeds some k.
  // Decoding: a budget or recent window that is not an amount or does not fit (r <= k <= n), the
  // layerwise scope or a floor (not computed for decoding), a page size above some k or whose
  // window's pages do not fit in k, pages with intervals, column generation with intervals; an
  // interval without a target or
  // below 1, a target without an interval or with budgets, a prompt_len outside [0, n - 1] (read
  // with intervals only), presses or alpha_safeguard. Prefill: alpha_safeguard without presses or
  // outside [0, 1], a press the trace cannot serve, layer_ratios without presses, not one per
  // chosen layer or outside [0, 1). Both: no scope, a layer the trace lacks.
  void validate(const Trace& trace) const;
  std::vector<int> chosen_layers(const Trace& trace) const;  // `layers`, or every layer
  std::vector<BudgetScope> chosen_scopes() const;            // `scopes`, or the protocol's default
  // Decoding: (k, r) per unit for each budget, resolved against the trace's n (kvo::Error for a
  // bad amount).
  std::vector<std::pair<int, int>> decoding_budgets(const Trace& trace) const;
  // Periodic decoding: (T, r) per unit for each target, resolved the same way.
  std::vector<std::pair<int, int>> periodic_targets(const Trace& trace) const;
  bool periodic() const { return !intervals.empty(); }
  // Every field once (JSON, the CLI's flags, Python's keywords); the names are kvpress's where it has
  // one: compression_ratio (ratios), interval (intervals), target (targets).
  static const Schema<AllocationRequest>& schema();
  nlohmann::json to_json() const;
  static AllocationRequest from_json(const nlohmann::json& j);
};

// The floor in slots at per-unit budget k ("floor: ..." kvo::Error for a bad amount).
int resolve_allocation_floor(const std::string& text, int k);

}  // namespace kvo
