#include "kvo/core/budget_scope.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"

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

}  // namespace

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

std::string budget_scoped_name(const std::string& name, BudgetScope scope) {
  return scope == BudgetScope::Head ? name : name + "@" + budget_scope_name(scope);
}

std::string join_budget_scopes(const std::vector<BudgetScope>& scopes) {
  std::vector<std::string> names;
  for (BudgetScope x : scopes) names.push_back(budget_scope_name(x));
  return join_list(names);
}

}  // namespace kvo
