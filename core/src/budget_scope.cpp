#include "kvo/core/budget_scope.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include "kvo/core/registry.hpp"
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
constexpr Registry<BudgetScopeEntry, kScopes.size()> kScopeRegistry{kScopes, "budget scope", "scopes"};
static_assert(kScopeRegistry.complete(), "the scope table holds one entry per BudgetScope, in order");

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

std::span<const BudgetScopeEntry> budget_scope_table() { return kScopeRegistry.all(); }

std::string budget_scope_name(BudgetScope scope) { return std::string(kScopeRegistry[scope].name); }

std::vector<BudgetScope> parse_budget_scopes(std::string_view names) {
  return kScopeRegistry.parse_list(names, {.all = true, .repeated = RepeatedName::Once});
}

std::string budget_scoped_name(const std::string& name, BudgetScope scope) {
  return scope == BudgetScope::Head ? name : name + "@" + budget_scope_name(scope);
}

std::string join_budget_scopes(const std::vector<BudgetScope>& scopes) { return kScopeRegistry.join(scopes); }

}  // namespace kvo
