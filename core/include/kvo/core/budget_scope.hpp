// Who shares a KV budget: each (layer, KV head) alone, the KV heads of a layer, the layers with
// every head of a layer alike, or the whole model. One table of scopes, read by the shared-budget
// optima (oracle/allocation.hpp) and the closed-loop evaluation (studies/press_eval.hpp).
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/core/field_schema.hpp"

namespace kvo {

// Who shares a budget, in the table's (and `kvoracle oracle allocation`'s) order.
enum class BudgetScope : int { Head, Layer, Layerwise, Model, Count };

struct BudgetScopeEntry {
  BudgetScope id;
  std::string_view name;
  std::string_view summary;
};
std::span<const BudgetScopeEntry> budget_scope_table();
std::string budget_scope_name(BudgetScope scope);
// Comma-separated names, or "all" (kvo::Error naming the known ones).
std::vector<BudgetScope> parse_budget_scopes(std::string_view names);
std::string join_budget_scopes(const std::vector<BudgetScope>& scopes);
// A list of scopes as a field (field_schema.hpp): names as text, the joined names in JSON; empty
// text is no scope (the request's default applies).
template <>
struct FieldCodec<std::vector<BudgetScope>> {
  static constexpr std::string_view kind = "list of scopes";
  static constexpr bool list = true;
  static void from_text(std::vector<BudgetScope>& v, std::string_view text, const std::string&) {
    v = text.empty() ? std::vector<BudgetScope>{} : parse_budget_scopes(text);
  }
  static std::string to_text(const std::vector<BudgetScope>& v) { return join_budget_scopes(v); }
  static nlohmann::json to_json(const std::vector<BudgetScope>& v) { return join_budget_scopes(v); }
  static void from_json(std::vector<BudgetScope>& v, const nlohmann::json& j, const std::string& name) {
    if (!j.is_string()) throw JsonWrongType{};
    from_text(v, j.get<std::string>(), name);
  }
};

// A row's name under a scope: `name` per head, "name@layer" (and so on) when the budget is shared.
std::string budget_scoped_name(const std::string& name, BudgetScope scope);

// The units (layer-major indices) that share one budget under the head, layer or model scope.
std::vector<std::vector<size_t>> sharing_units(BudgetScope scope, size_t layers, size_t kv_heads);

}  // namespace kvo
