// An engine's eviction contract: what a schedule may do under it. Who shares one kept set (each
// (layer, KV head), each layer's KV heads, each KV head across the layers, or the whole model, as
// llama.cpp's position removal imposes), who shares one budget, protected sinks and window, whole pages, eviction at
// every step, periodically or once per prefill chunk, eviction applied a fixed delay after it is decided, or admission
// only. The optimum under it is oracle/contract_optimum.hpp's; policies obey it through core/contract_group.hpp
// (docs/engines.md).
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/core/budget_scope.hpp"

namespace kvo {

// Which cache units hold one kept set between them (every token held or evicted in all at once).
enum class KeptSets : int { Head, Layer, KvHead, Model, Count };
struct KeptSetsEntry {
  KeptSets id;
  std::string_view name;
  std::string_view summary;
};
std::span<const KeptSetsEntry> kept_sets_table();
std::string kept_sets_name(KeptSets sets);
KeptSets parse_kept_sets(std::string_view name);  // kvo::Error naming the known ones

// A cache unit of a contract: its layer and KV head.
struct ContractUnit {
  int layer = 0, kv_head = 0;
};

// Every (layer, KV head) of a model, layer by layer: the order in which contracts list their units.
std::vector<ContractUnit> model_units(int layers, int kv_heads);

struct EvictionContract {
  KeptSets kept_sets = KeptSets::Head;           // units holding one kept set between them
  BudgetScope budget_scope = BudgetScope::Head;  // kept sets sharing one budget: each alone (head), a layer's, all
  // k: the most tokens a kept set holds, sinks and window included: what each query sees when
  // evicting at every step, what is left after each compression otherwise (chunk or interval).
  int budget = 1;
  int recent = 0;               // r: the newest r tokens are never evicted
  int sinks = 0;                // s: the first s tokens are never evicted (a protected start area or prompt)
  int page_size = 1;            // b: whole aligned pages of b positions are evicted together
  int prompt_len = 0;           // P: steps before P are the prompt's (read by chunk and interval)
  int chunk = 0;                // c > 0: the prompt is compressed after every c tokens and after its last
  int interval = 0;             // N > 0: decoding compresses after every N steps (0: after every step)
  int delay = 0;                // d: an eviction takes effect d steps after it is decided
  bool admission_only = false;  // a token is admitted or dropped for good when it leaves the window

  // kvo::Error naming the field: sizes outside their ranges for n tokens (k in [1, n]; sinks with
  // the window, or with the delay, within k; the window's pages within k), a budget scope other
  // than head, layer or model, layer budgets over kept sets that span layers, a page size that is not a power of two or
  // does not hold the sinks in whole pages, and the combinations that mean nothing: pages or a delay with compressions,
  // pages with a delay, compressions with admission only, a chunk without a prompt.
  void validate(int n) const;
  // Every step after which the cache is compressed (empty when it evicts after every step).
  bool compresses() const { return chunk > 0 || interval > 0; }
  std::vector<int> compression_steps(int n) const;
  // By step: whether the contract may evict after it (admission only: every step; compressions:
  // their steps; otherwise every step once the kept sets can exceed k, counted with a delay's
  // pending tokens and a page's slack). A decoder may run a group's units apart between these.
  std::vector<char> eviction_steps(int n) const;
  // Tokens a kept set holds at most after a step: k when evicting at every step, else the target
  // plus the longest stretch between compressions (the first one counted from the start).
  int most_held(int n) const;
  // The units that must be evicted for together (a budget group, or a kept set spanning several):
  // head, layer or model, in replay's grouping of units.
  BudgetScope grouping() const;
  // The kept sets of `units` (indexes into it, each set in order of its first unit), and the
  // budget groups of those sets (indexes into the sets): what the optimum and the policies share.
  std::vector<std::vector<size_t>> sets_of(std::span<const ContractUnit> units) const;
  std::vector<std::vector<size_t>> budget_groups_of(std::span<const ContractUnit> units,
                                                    const std::vector<std::vector<size_t>>& sets) const;
};

}  // namespace kvo
