#include "kvo/oracle/allocation_methods.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

#include "kvo/core/adakv.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/text_list.hpp"
#include "scope_optimum.hpp"

namespace kvo {
namespace {

struct MethodInputs {
  const std::vector<std::vector<double>>& weights;
  const std::vector<std::vector<double>>& gains;  // weights sorted, heaviest first
  size_t kv_heads;
  double prompt_mass, per_head;
};

// A row from the kept sets per unit: its value, the optimum at its counts, its scope's and any
// allocation's optimum at its total.
AllocationMethodRow measure(AllocationMethodRow row, const std::vector<std::vector<int>>& kept,
                            const MethodInputs& in) {
  for (size_t u = 0; u < kept.size(); ++u) {
    const int m = static_cast<int>(kept[u].size());
    row.slots.push_back(m);
    row.total += m;
    for (int j : kept[u]) row.value += in.weights[u][static_cast<size_t>(j)];
    row.at_counts += std::accumulate(in.gains[u].begin(), in.gains[u].begin() + m, 0.0);
  }
  const ScopeOptimum scope = solve_scope_optimum(row.scope, in.gains, in.kv_heads, row.slots, row.floor);
  row.scope_optimum = scope.value;
  row.scope_upper = scope.upper;
  const ScopeOptimum best = solve_scope_optimum(BudgetScope::Model, in.gains, in.kv_heads, row.slots, 0);
  row.best = best.value;
  row.best_upper = best.upper;
  row.per_head = in.per_head;
  row.prompt_mass = in.prompt_mass;
  const auto [lo, hi] = std::minmax_element(row.slots.begin(), row.slots.end());
  row.min_slots = row.slots.empty() ? 0 : *lo;
  row.max_slots = row.slots.empty() ? 0 : *hi;
  return row;
}

// The head scope's optimum at per-unit budget k: each unit's k heaviest keys.
double per_head_optimum(const std::vector<std::vector<double>>& gains, int k) {
  double sum = 0;
  for (const auto& g : gains) sum = std::accumulate(g.begin(), g.begin() + std::min<size_t>(g.size(), k), sum);
  return sum;
}

// The press run on each chosen layer at that layer's compression ratio.
std::vector<PressResult> run_on_layers(const Trace& tr, const AllocationRequest& request,
                                       const std::vector<int>& layers, PressId id,
                                       const std::function<double(size_t)>& ratio_of_layer) {
  std::vector<PressResult> per_layer(layers.size());
  parallel_for(static_cast<int>(layers.size()), request.threads, [&](int x) {
    PressOptions o = request.press;
    o.id = id;
    o.compression_ratio = ratio_of_layer(static_cast<size_t>(x));
    per_layer[static_cast<size_t>(x)] =
        run_press(press_layer_of(tr, layers[static_cast<size_t>(x)], request.prompt_len), o);
  });
  return per_layer;
}

std::vector<std::vector<int>> kept_sets(const std::vector<PressResult>& per_layer) {
  std::vector<std::vector<int>> kept;
  for (const PressResult& pr : per_layer)
    for (const auto& s : pr.kept) kept.push_back(s);
  return kept;
}

// Where a press's counts move: PyramidKV's across layers by its rule, every other press's nowhere.
BudgetScope press_scope(PressId id) { return id == PressId::PyramidKV ? BudgetScope::Layerwise : BudgetScope::Head; }

}  // namespace

std::vector<AllocationMethodRow> compare_allocation_methods(const Trace& tr, const AllocationRequest& request,
                                                            const std::vector<int>& layers,
                                                            const std::vector<std::vector<double>>& weights) {
  std::vector<AllocationMethodRow> rows;
  if (request.presses.empty()) return rows;
  const size_t kv = static_cast<size_t>(tr.n_kv_heads);
  std::vector<std::vector<double>> gains = weights;
  for (auto& g : gains) std::stable_sort(g.begin(), g.end(), std::greater<>());
  double prompt_mass = 0;
  for (const auto& w : weights) prompt_mass = std::accumulate(w.begin(), w.end(), prompt_mass);
  const std::vector<PressId> presses = parse_press_list(request.presses);
  for (double r : request.ratios) {
    const int k = press_n_kept(request.prompt_len, r);
    const MethodInputs in{weights, gains, kv, prompt_mass, per_head_optimum(gains, k)};
    for (PressId id : presses) {
      const std::vector<PressResult> per_layer = run_on_layers(tr, request, layers, id, [r](size_t) { return r; });
      AllocationMethodRow alone;
      alone.method = press_name(id);
      alone.press = id;
      alone.compression_ratio = r;
      alone.k = k;
      alone.scope = press_scope(id);
      rows.push_back(measure(alone, kept_sets(per_layer), in));
      for (double alpha : request.alpha_safeguard) {
        AllocationMethodRow ada = alone;
        ada.method = "adakv(" + press_name(id) + ", " + join_numbers({alpha}) + ")";
        ada.alpha_safeguard = alpha;
        ada.scope = BudgetScope::Layer;
        ada.floor = adakv_safeguard(k, alpha);
        std::vector<std::vector<int>> kept;
        for (const PressResult& pr : per_layer)
          for (auto& s : adakv_kept(pr.scores, k, alpha)) kept.push_back(std::move(s));
        rows.push_back(measure(ada, kept, in));
      }
    }
  }
  if (request.layer_ratios.empty()) return rows;
  // PerLayerCompressionPress: each layer at the caller's ratio. kvpress reports the mean ratio as
  // the wrapper's compression_ratio; k and the per-head optimum are those of that mean.
  const std::vector<double>& lr = request.layer_ratios;
  const double mean = std::accumulate(lr.begin(), lr.end(), 0.0) / static_cast<double>(lr.size());
  const int k = press_n_kept(request.prompt_len, mean);
  const MethodInputs in{weights, gains, kv, prompt_mass, per_head_optimum(gains, k)};
  for (PressId id : presses) {
    AllocationMethodRow row;
    row.method = "per-layer(" + press_name(id) + ")";
    row.press = id;
    row.compression_ratio = mean;
    row.k = k;
    row.scope = press_scope(id);
    rows.push_back(
        measure(row, kept_sets(run_on_layers(tr, request, layers, id, [&](size_t x) { return lr[x]; })), in));
  }
  return rows;
}

nlohmann::json to_json(const AllocationMethodRow& r) {
  return {{"method", r.method},
          {"press", press_name(r.press)},
          {"alpha_safeguard", r.alpha_safeguard < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.alpha_safeguard)},
          {"compression_ratio", r.compression_ratio},
          {"k", r.k},
          {"scope", budget_scope_name(r.scope)},
          {"floor", r.floor},
          {"total", r.total},
          {"value", r.value},
          {"at_counts", r.at_counts},
          {"scope_optimum", r.scope_optimum},
          {"scope_upper", r.scope_upper},
          {"best", r.best},
          {"best_upper", r.best_upper},
          {"per_head", r.per_head},
          {"prompt_mass", r.prompt_mass},
          {"min_slots", r.min_slots},
          {"max_slots", r.max_slots},
          {"slots", r.slots}};
}

}  // namespace kvo
