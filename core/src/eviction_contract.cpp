#include "kvo/core/eviction_contract.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <string>
#include <tuple>

#include "kvo/core/error.hpp"
#include "kvo/core/page_shape.hpp"
#include "kvo/core/registry.hpp"

namespace kvo {
namespace {

constexpr std::array<KeptSetsEntry, static_cast<size_t>(KeptSets::Count)> kKeptSets = {{
    {KeptSets::Head, "head", "every (layer, KV head) keeps its own set"},
    {KeptSets::Layer, "layer", "the KV heads of each layer keep one set"},
    {KeptSets::KvHead, "kv-head", "each KV head keeps one set across every layer"},
    {KeptSets::Model, "model", "one set for every layer and head (llama.cpp's position removal)"},
}};
constexpr Registry<KeptSetsEntry, kKeptSets.size()> kKeptSetsRegistry{kKeptSets, "kept-set scope", "kept-set scopes"};
static_assert(kKeptSetsRegistry.complete(), "the kept-set table holds one entry per KeptSets, in order");

std::string num(int v) { return std::to_string(v); }

}  // namespace

std::span<const KeptSetsEntry> kept_sets_table() { return kKeptSetsRegistry.all(); }
std::string kept_sets_name(KeptSets sets) { return std::string(kKeptSetsRegistry[sets].name); }
KeptSets parse_kept_sets(std::string_view name) { return kKeptSetsRegistry.parse(name).id; }

BudgetScope EvictionContract::grouping() const {
  if (budget_scope == BudgetScope::Model || kept_sets == KeptSets::Model || kept_sets == KeptSets::KvHead)
    return BudgetScope::Model;
  if (budget_scope == BudgetScope::Layer || kept_sets == KeptSets::Layer) return BudgetScope::Layer;
  return BudgetScope::Head;
}

std::vector<ContractUnit> model_units(int layers, int kv_heads) {
  std::vector<ContractUnit> units;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < kv_heads; ++h) units.push_back({l, h});
  return units;
}

std::vector<std::vector<size_t>> EvictionContract::sets_of(std::span<const ContractUnit> units) const {
  std::map<std::tuple<int, int>, size_t> index;
  std::vector<std::vector<size_t>> sets;
  for (size_t u = 0; u < units.size(); ++u) {
    const ContractUnit& x = units[u];
    const std::tuple<int, int> key = kept_sets == KeptSets::Head     ? std::tuple{x.layer, x.kv_head}
                                     : kept_sets == KeptSets::Layer  ? std::tuple{x.layer, -1}
                                     : kept_sets == KeptSets::KvHead ? std::tuple{-1, x.kv_head}
                                                                     : std::tuple{-1, -1};
    const auto [it, added] = index.emplace(key, sets.size());
    if (added) sets.emplace_back();
    sets[it->second].push_back(u);
  }
  return sets;
}

std::vector<std::vector<size_t>> EvictionContract::budget_groups_of(
    std::span<const ContractUnit> units, const std::vector<std::vector<size_t>>& sets) const {
  std::map<int, size_t> index;
  std::vector<std::vector<size_t>> groups;
  for (size_t x = 0; x < sets.size(); ++x) {
    const int key = budget_scope == BudgetScope::Head    ? static_cast<int>(x)
                    : budget_scope == BudgetScope::Layer ? units[sets[x].front()].layer
                                                         : -1;
    const auto [it, added] = index.emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(x);
  }
  return groups;
}

void EvictionContract::validate(int n) const {
  require(n >= 1, "the trace has no tokens");
  require(budget_scope == BudgetScope::Head || budget_scope == BudgetScope::Layer || budget_scope == BudgetScope::Model,
          "budget_scope: '" + budget_scope_name(budget_scope) + "' is not a contract's scope (head, layer or model)");
  require(budget_scope != BudgetScope::Layer || kept_sets == KeptSets::Head || kept_sets == KeptSets::Layer,
          "budget_scope: a layer's budget cannot hold kept sets that span layers (kept_sets '" +
              kept_sets_name(kept_sets) + "')");
  require(budget >= 1 && budget <= n, "budget: " + num(budget) + " tokens is outside [1, " + num(n) + "]");
  require(sinks >= 0 && sinks < budget,
          "sinks: " + num(sinks) + " protected tokens leave no slot of the budget of " + num(budget));
  require(sinks < n, "sinks: " + num(sinks) + " protected tokens cover the whole trace of " + num(n));
  require(recent >= 0 && sinks + recent <= budget,
          "recent: a window of " + num(recent) + " with " + num(sinks) + " sinks exceeds the budget of " + num(budget));
  require(delay >= 0 && sinks + delay <= budget, "delay: " + num(delay) + " steps of held evictions with " +
                                                     num(sinks) + " sinks exceed the budget of " + num(budget));
  require(chunk >= 0, "chunk: " + num(chunk) + " must be 0 (no chunked prefill) or a positive size");
  require(interval >= 0, "interval: " + num(interval) + " must be 0 (every step) or a positive number of steps");
  require(prompt_len >= 0 && prompt_len < n, "prompt_len: " + num(prompt_len) + " is outside [0, " + num(n - 1) + "]");
  require(chunk == 0 || prompt_len >= 1, "chunk: a chunked prefill needs a prompt (prompt_len >= 1)");
  require(!(compresses() && delay > 0),
          "delay: a delayed eviction with chunk or interval is not a contract kvoracle models");
  require(!(compresses() && admission_only),
          "admission_only: an admission-only cache evicts nothing, so it has no chunk or interval");
  require(page_size >= 1 && std::has_single_bit(static_cast<unsigned>(page_size)),
          "page_size: " + num(page_size) + " is not a positive power of two");
  if (page_size > 1) {
    require(!compresses(), "page_size: whole pages with chunk or interval are not a contract kvoracle models");
    require(delay == 0, "page_size: whole pages with a delay are not a contract kvoracle models");
    require(sinks % page_size == 0, "page_size: the " + num(sinks) + " sinks are not whole pages of " + num(page_size));
    try {
      page_shape(budget - sinks, std::max(recent, delay), page_size);
    } catch (const Error& e) {
      throw Error("page_size: " + std::string(e.what()));
    }
  }
}

int EvictionContract::most_held(int n) const {
  if (!compresses()) return budget;
  const std::vector<int> points = compression_steps(n);
  if (points.empty()) return n;
  int peak = points.front() + 1;
  for (size_t x = 1; x < points.size(); ++x) peak = std::max(peak, budget + points[x] - points[x - 1]);
  return std::min(n, std::max(peak, budget + n - 1 - points.back()));
}

std::vector<int> EvictionContract::compression_steps(int n) const {
  std::vector<int> out;
  if (!compresses()) return out;
  const auto add = [&](long long c) {
    if (c < n - 1 && (out.empty() || c > out.back())) out.push_back(static_cast<int>(c));
  };
  if (chunk > 0) {
    for (long long c = chunk - 1; c < prompt_len - 1; c += chunk) add(c);
    add(prompt_len - 1);
  }
  const long long step = interval > 0 ? interval : 1;
  for (long long c = static_cast<long long>(prompt_len) + step - 1; c < n - 1; c += step) add(c);
  return out;
}

std::vector<char> EvictionContract::eviction_steps(int n) const {
  std::vector<char> steps(static_cast<size_t>(std::max(n, 0)), 0);
  if (admission_only) {
    std::fill(steps.begin(), steps.end(), 1);
  } else if (compresses()) {
    for (int c : compression_steps(n)) steps[static_cast<size_t>(c)] = 1;
  } else {
    for (int i = 0; i < n; ++i) steps[static_cast<size_t>(i)] = i + 1 + delay + page_size > budget;
  }
  return steps;
}

}  // namespace kvo
