#include "kvo/oracle/shared_prefill.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <numeric>

#include "kvo/core/budget.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/json_fields.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/oracle/budget_allocation.hpp"
#include "scope_optimum.hpp"

namespace kvo {
namespace {

std::vector<int> heaviest_first(const PrefillUnit& u) {
  std::vector<int> order(u.weight.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return u.weight[static_cast<size_t>(a)] > u.weight[static_cast<size_t>(b)]; });
  return order;
}

// The weights of the aligned pages of b positions (the last may be short), heaviest first.
std::vector<double> sorted_page_gains(const std::vector<double>& weight, int b) {
  std::vector<double> g((weight.size() + static_cast<size_t>(b) - 1) / static_cast<size_t>(b), 0.0);
  for (size_t j = 0; j < weight.size(); ++j) g[j / static_cast<size_t>(b)] += weight[j];
  std::stable_sort(g.begin(), g.end(), std::greater<>());
  return g;
}

SharedPrefillRow solve_scope(BudgetScope scope, const std::vector<std::vector<double>>& gains, size_t kv_heads, int k,
                             int floor) {
  SharedPrefillRow row;
  row.scope = scope;
  row.k = k;
  row.floor = scope == BudgetScope::Head ? k : floor;
  const std::vector<int> budgets(gains.size(), k);
  ScopeOptimum o = solve_scope_optimum(scope, gains, kv_heads, budgets, floor);
  row.value = o.value;
  row.upper = o.upper;
  row.slots = std::move(o.slots);
  row.total = static_cast<long>(gains.size()) * k;
  const auto [lo, hi] = std::minmax_element(row.slots.begin(), row.slots.end());
  row.min_slots = row.slots.empty() ? 0 : *lo;
  row.max_slots = row.slots.empty() ? 0 : *hi;
  if (row.floor > 0 && scope != BudgetScope::Head)
    row.at_floor = std::count(row.slots.begin(), row.slots.end(), row.floor);
  return row;
}

}  // namespace

std::vector<int> shared_prefill_set(const PrefillUnit& unit, int slots) {
  require(slots >= 0 && static_cast<size_t>(slots) <= unit.weight.size(),
          "shared prefill: " + std::to_string(slots) + " slots is outside the prompt");
  std::vector<int> order = heaviest_first(unit);
  order.resize(static_cast<size_t>(slots));
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<std::vector<int>> shared_prefill_sets(const std::vector<PrefillUnit>& units, int kv_heads,
                                                  BudgetScope scope, int k) {
  require(kv_heads >= 1 && units.size() % static_cast<size_t>(kv_heads) == 0,
          "shared prefill: the units must be whole layers of " + std::to_string(kv_heads) + " KV heads");
  std::vector<std::vector<double>> gains;
  for (const PrefillUnit& u : units) gains.push_back(sorted_page_gains(u.weight, 1));
  const std::vector<int> budgets(units.size(), k);
  const ScopeOptimum o = solve_scope_optimum(scope, gains, static_cast<size_t>(kv_heads), budgets, 0);
  std::vector<std::vector<int>> sets;
  for (size_t u = 0; u < units.size(); ++u) sets.push_back(shared_prefill_set(units[u], o.slots[u]));
  return sets;
}

SharedPrefillResult run_shared_prefill(const Trace& tr, const AllocationRequest& request) {
  request.validate(tr);
  SharedPrefillResult res;
  res.prompt_len = request.prompt_len;
  res.following = tr.n_tokens - request.prompt_len;
  res.kv_heads = tr.n_kv_heads;
  res.layers = request.chosen_layers(tr);
  const size_t kv = static_cast<size_t>(tr.n_kv_heads);
  std::vector<std::vector<double>> weights(res.layers.size() * kv);
  std::vector<double> mass(weights.size());
  parallel_for(static_cast<int>(weights.size()), request.threads, [&](int x) {
    const size_t u = static_cast<size_t>(x);
    PrefillUnit unit = prefill_unit(tr, res.layers[u / kv], static_cast<int>(u % kv), request.prompt_len, false);
    weights[u] = std::move(unit.weight);
    mass[u] = unit.prompt_mass;
    if (request.on_unit) request.on_unit();
  });
  const double prompt_mass = std::accumulate(mass.begin(), mass.end(), 0.0);
  // Gains per page size; size 1 first: the token-level values every row is compared with.
  std::vector<int> sizes = {1};
  for (int b : request.page_sizes)
    if (std::find(sizes.begin(), sizes.end(), b) == sizes.end()) sizes.push_back(b);
  std::vector<std::vector<std::vector<double>>> gains(sizes.size());
  for (size_t s = 0; s < sizes.size(); ++s)
    for (const auto& w : weights) gains[s].push_back(sorted_page_gains(w, sizes[s]));
  for (double r : request.ratios) {
    const int k = press_n_kept(request.prompt_len, r);
    const int floor = resolve_allocation_floor(request.floor, k);
    // Each scope's optimum over single tokens, solved once: the rows of page size 1 and the
    // reference (token_value, per_head_value) of every page size.
    std::vector<SharedPrefillRow> tokens(static_cast<size_t>(BudgetScope::Count));
    tokens[static_cast<size_t>(BudgetScope::Head)] = solve_scope(BudgetScope::Head, gains[0], kv, k, floor);
    for (BudgetScope scope : request.chosen_scopes())
      if (scope != BudgetScope::Head) tokens[static_cast<size_t>(scope)] = solve_scope(scope, gains[0], kv, k, floor);
    const double per_head = tokens[static_cast<size_t>(BudgetScope::Head)].value;
    for (int b : request.page_sizes) {
      const size_t s = static_cast<size_t>(std::find(sizes.begin(), sizes.end(), b) - sizes.begin());
      const int pages = k / b, floor_pages = std::min(pages, (floor + b - 1) / b);
      for (BudgetScope scope : request.chosen_scopes()) {
        SharedPrefillRow row =
            b == 1 ? tokens[static_cast<size_t>(scope)] : solve_scope(scope, gains[s], kv, pages, floor_pages);
        for (int* x : {&row.floor, &row.min_slots, &row.max_slots}) *x *= b;
        for (int& x : row.slots) x *= b;
        row.total *= b;
        row.page_size = b;
        row.k = k;
        row.compression_ratio = r;
        row.per_head_value = per_head;
        row.token_value = tokens[static_cast<size_t>(scope)].value;
        row.prompt_mass = prompt_mass;
        row.gain = per_head > 0 ? row.value / per_head : 1.0;
        res.rows.push_back(std::move(row));
      }
    }
  }
  res.methods = compare_allocation_methods(tr, request, res.layers, weights);
  return res;
}

nlohmann::json SharedPrefillResult::to_json(const std::string& trace) const {
  nlohmann::json rows_json = nlohmann::json::array();
  for (const SharedPrefillRow& r : rows)
    rows_json.push_back({{"scope", budget_scope_name(r.scope)},
                         {"compression_ratio", r.compression_ratio},
                         {"page_size", r.page_size},
                         {"k", r.k},
                         {"floor", r.floor},
                         {"total", r.total},
                         {"value", r.value},
                         {"upper", r.upper},
                         {"per_head_value", r.per_head_value},
                         {"token_value", r.token_value},
                         {"prompt_mass", r.prompt_mass},
                         {"gain", r.gain},
                         {"min_slots", r.min_slots},
                         {"max_slots", r.max_slots},
                         {"at_floor", r.at_floor},
                         {"slots", r.slots}});
  nlohmann::json methods_json = nlohmann::json::array();
  for (const AllocationMethodRow& m : methods) methods_json.push_back(kvo::to_json(m));
  return {{"trace", trace},       {"protocol", "prefill"}, {"prompt_len", prompt_len}, {"following_queries", following},
          {"kv_heads", kv_heads}, {"layers", layers},      {"rows", rows_json},        {"methods", methods_json}};
}

}  // namespace kvo
