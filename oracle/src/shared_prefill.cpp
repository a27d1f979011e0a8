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

namespace kvo {
namespace {

constexpr std::array<BudgetScopeEntry, static_cast<size_t>(BudgetScope::Count)> kScopes = {{
    {BudgetScope::Head, "head", "every (layer, KV head) keeps k: today's per-head budgets"},
    {BudgetScope::Layer, "layer", "the KV heads of each layer share H k (Ada-KV's allocation)"},
    {BudgetScope::Layerwise, "layerwise",
     "the layers share L H k, every KV head of a layer keeping the same count (PyramidKV's freedom)"},
    {BudgetScope::Model, "model", "every (layer, KV head) shares L H k (a global top-k)"},
}};
constexpr bool scopes_in_order() {
  for (size_t i = 0; i < kScopes.size(); ++i)
    if (static_cast<size_t>(kScopes[i].id) != i) return false;
  return true;
}
static_assert(scopes_in_order(), "the scope table holds one entry per BudgetScope, in order");

std::string known_scopes() {
  std::string s;
  for (const auto& e : kScopes) {
    if (!s.empty()) s += ", ";
    s += e.name;
  }
  return s;
}

// The floor in slots at per-unit budget k.
int resolve_floor(const std::string& text, int k) {
  Amount a;
  try {
    a = Amount::parse(text, /*allow_zero=*/true);
  } catch (const Error& e) {
    throw Error("floor: " + std::string(e.what()));
  }
  return a.value == 0 ? 0 : a.resolve(k);
}

std::vector<int> chosen_layers(const Trace& tr, const std::vector<int>& layers) {
  std::vector<int> out = layers;
  if (out.empty())
    for (int l = 0; l < tr.n_layers; ++l) out.push_back(l);
  for (int l : out) require(l >= 0 && l < tr.n_layers, "layers: layer " + std::to_string(l) + " is not in the trace");
  return out;
}

// A unit's prompt weights, heaviest first (ties: the earlier position): its gains.
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

// The units that share one budget under a per-unit scope (head, layer, model), layer-major.
std::vector<std::vector<size_t>> sharing_units(BudgetScope scope, size_t layers, size_t kv_heads) {
  std::vector<std::vector<size_t>> sets;
  const size_t units = layers * kv_heads;
  if (scope == BudgetScope::Head)
    for (size_t u = 0; u < units; ++u) sets.push_back({u});
  if (scope == BudgetScope::Layer)
    for (size_t l = 0; l < layers; ++l) {
      sets.emplace_back();
      for (size_t h = 0; h < kv_heads; ++h) sets.back().push_back(l * kv_heads + h);
    }
  if (scope == BudgetScope::Model) {
    sets.emplace_back(units);
    std::iota(sets.back().begin(), sets.back().end(), size_t{0});
  }
  return sets;
}

void add_allocation(SharedPrefillRow& row, std::span<const AllocationGroup> groups, long total) {
  const BudgetAllocation a = allocate_budget(groups, total);
  row.value += a.value;
  row.upper += a.upper;
  row.slots.insert(row.slots.end(), a.slots.begin(), a.slots.end());
}

SharedPrefillRow solve_scope(BudgetScope scope, const std::vector<std::vector<double>>& gains, size_t kv_heads, int k,
                             int floor) {
  SharedPrefillRow row;
  row.scope = scope;
  row.k = k;
  row.floor = scope == BudgetScope::Head ? k : floor;
  const size_t layers = gains.size() / kv_heads;
  if (scope == BudgetScope::Layerwise) {
    // One group per layer: a slot more in each of its KV heads gains the sum of their next weights.
    std::vector<AllocationGroup> groups(layers);
    for (size_t l = 0; l < layers; ++l) {
      groups[l].floor = floor;
      groups[l].gains.assign(gains[l * kv_heads].size(), 0.0);
      for (size_t h = 0; h < kv_heads; ++h)
        for (size_t m = 0; m < groups[l].gains.size(); ++m) groups[l].gains[m] += gains[l * kv_heads + h][m];
    }
    add_allocation(row, groups, static_cast<long>(layers) * k);
    std::vector<int> per_layer = std::move(row.slots);
    row.slots.clear();
    for (int s : per_layer) row.slots.insert(row.slots.end(), kv_heads, s);
  } else {
    for (const std::vector<size_t>& members : sharing_units(scope, layers, kv_heads)) {
      std::vector<AllocationGroup> groups;
      for (size_t u : members) groups.push_back({gains[u], row.floor});
      add_allocation(row, groups, static_cast<long>(members.size()) * k);
    }
  }
  row.total = static_cast<long>(gains.size()) * k;
  const auto [lo, hi] = std::minmax_element(row.slots.begin(), row.slots.end());
  row.min_slots = row.slots.empty() ? 0 : *lo;
  row.max_slots = row.slots.empty() ? 0 : *hi;
  if (row.floor > 0 && scope != BudgetScope::Head)
    row.at_floor = std::count(row.slots.begin(), row.slots.end(), row.floor);
  return row;
}

const JsonForm<SharedPrefillRequest>& request_json() {
  static const JsonForm<SharedPrefillRequest> form = [] {
    JsonForm<SharedPrefillRequest> f("shared prefill request");
    f.field("prompt_len", &SharedPrefillRequest::prompt_len)
        .field("ratios", &SharedPrefillRequest::ratios)
        .field(
            "scopes", [](const SharedPrefillRequest& r) { return nlohmann::json(join_budget_scopes(r.scopes)); },
            [](SharedPrefillRequest& r, const nlohmann::json& v) {
              r.scopes = parse_budget_scopes(v.get<std::string>());
            })
        .field("floor", &SharedPrefillRequest::floor)
        .field("page_sizes", &SharedPrefillRequest::page_sizes)
        .field("layers", &SharedPrefillRequest::layers)
        .field("threads", &SharedPrefillRequest::threads);
    return f;
  }();
  return form;
}

}  // namespace

std::span<const BudgetScopeEntry> budget_scope_table() { return kScopes; }

std::string budget_scope_name(BudgetScope scope) { return std::string(kScopes[static_cast<size_t>(scope)].name); }

std::vector<BudgetScope> parse_budget_scopes(std::string_view names) {
  std::vector<BudgetScope> out;
  if (names == "all") {
    for (const auto& e : kScopes) out.push_back(e.id);
    return out;
  }
  for (const std::string& name : split_list(names, "scopes")) {
    const auto it = std::find_if(kScopes.begin(), kScopes.end(), [&](const auto& e) { return e.name == name; });
    require(it != kScopes.end(), "unknown budget scope '" + name + "' (known: " + known_scopes() + ", all)");
    if (std::find(out.begin(), out.end(), it->id) == out.end()) out.push_back(it->id);
  }
  require(!out.empty(), "scopes: give at least one budget scope (" + known_scopes() + ")");
  return out;
}

std::string join_budget_scopes(const std::vector<BudgetScope>& scopes) {
  std::vector<std::string> names;
  for (BudgetScope x : scopes) names.push_back(budget_scope_name(x));
  return join_list(names);
}

void SharedPrefillRequest::validate(const Trace& tr) const {
  require(prompt_len >= 1 && prompt_len < tr.n_tokens, "prompt_len must be in [1, " + std::to_string(tr.n_tokens - 1) +
                                                           "] (the trace has " + std::to_string(tr.n_tokens) +
                                                           " tokens; queries must follow the prompt)");
  require(!ratios.empty(), "compression_ratio: give at least one ratio");
  require(!scopes.empty(), "scopes: give at least one budget scope (" + known_scopes() + ")");
  require(!page_sizes.empty(), "page_sizes: give at least one page size (1: tokens)");
  for (int b : page_sizes)
    require(b >= 1 && std::has_single_bit(static_cast<unsigned>(b)),
            "page size " + std::to_string(b) + " is not a positive power of two");
  for (double r : ratios) {
    require(r >= 0 && r < 1,
            "compression_ratio " + join_numbers({r}) + " is outside [0, 1) (kvpress's rule: the fraction removed)");
    const int k = press_n_kept(prompt_len, r);
    const int f = resolve_floor(floor, k);
    require(f <= k, "floor " + floor + " is " + std::to_string(f) +
                        " slots per unit, more than the per-unit budget k = " + std::to_string(k) +
                        " at compression ratio " + join_numbers({r}) + ": the floors would exceed the total budget");
    for (int b : page_sizes)
      require(b <= k, "page size " + std::to_string(b) + " exceeds the per-unit budget k = " + std::to_string(k) +
                          " at compression ratio " + join_numbers({r}) + ": no whole page fits");
  }
  chosen_layers(tr, layers);
}

nlohmann::json SharedPrefillRequest::to_json() const { return request_json().write(*this); }
SharedPrefillRequest SharedPrefillRequest::from_json(const nlohmann::json& j) { return request_json().read(j); }

std::vector<int> shared_prefill_set(const PrefillUnit& unit, int slots) {
  require(slots >= 0 && static_cast<size_t>(slots) <= unit.weight.size(),
          "shared prefill: " + std::to_string(slots) + " slots is outside the prompt");
  std::vector<int> order = heaviest_first(unit);
  order.resize(static_cast<size_t>(slots));
  std::sort(order.begin(), order.end());
  return order;
}

SharedPrefillResult run_shared_prefill(const Trace& tr, const SharedPrefillRequest& request) {
  request.validate(tr);
  SharedPrefillResult res;
  res.prompt_len = request.prompt_len;
  res.following = tr.n_tokens - request.prompt_len;
  res.kv_heads = tr.n_kv_heads;
  res.layers = chosen_layers(tr, request.layers);
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
    const int floor = resolve_floor(request.floor, k);
    const double per_head = solve_scope(BudgetScope::Head, gains[0], kv, k, floor).value;
    std::vector<double> token_value(static_cast<size_t>(BudgetScope::Count));
    for (BudgetScope scope : request.scopes)
      token_value[static_cast<size_t>(scope)] = solve_scope(scope, gains[0], kv, k, floor).value;
    for (int b : request.page_sizes) {
      const size_t s = static_cast<size_t>(std::find(sizes.begin(), sizes.end(), b) - sizes.begin());
      const int pages = k / b, floor_pages = std::min(pages, (floor + b - 1) / b);
      for (BudgetScope scope : request.scopes) {
        SharedPrefillRow row = solve_scope(scope, gains[s], kv, pages, floor_pages);
        for (int* x : {&row.floor, &row.min_slots, &row.max_slots}) *x *= b;
        for (int& x : row.slots) x *= b;
        row.total *= b;
        row.page_size = b;
        row.k = k;
        row.compression_ratio = r;
        row.per_head_value = per_head;
        row.token_value = token_value[static_cast<size_t>(scope)];
        row.prompt_mass = prompt_mass;
        row.gain = per_head > 0 ? row.value / per_head : 1.0;
        res.rows.push_back(std::move(row));
      }
    }
  }
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
  return {{"trace", trace},       {"prompt_len", prompt_len}, {"following_queries", following},
          {"kv_heads", kv_heads}, {"layers", layers},         {"rows", rows_json}};
}

}  // namespace kvo
