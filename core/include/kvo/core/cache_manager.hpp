// Decoder-facing KV eviction, in the shape decoders use (OpenVINO GenAI's CacheEvictionAlgorithm,
// kvpress's presses): one manager for a model, one policy instance per (sequence, layer, KV head).
// After computing the new token's attention the decoder registers, per layer and KV head, the
// positions it holds and the query heads' probabilities over them (aggregated over the group),
// and gets back the positions to evict now. Budgets are absolute or ratios, per layer / head.
// Under a shared budget (run.budget_scope layer or model) the units of a layer or of the model step
// in lockstep: the step that completes a group's position decides for the whole group, and each
// other unit collects its share with take_evicted() before its next step. Under an engine's
// contract (core/eviction_contract.hpp: kept sets tied across heads or the whole model, sinks,
// window, pages, compressions, a delay, admission only) the units it groups step the same way and
// evict what the contract lets go (core/contract_group.hpp), as replay does with the same contract.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kvo/core/contract_group.hpp"
#include "kvo/core/eviction_contract.hpp"
#include "kvo/core/policy.hpp"
#include "kvo/core/run_config.hpp"
#include "kvo/core/shared_budget.hpp"

namespace kvo {

struct CacheManagerOptions {
  RunConfig run;  // policy, budget, prompt_len (positions < prompt_len - 1 are never evicted), seed
  int n_layers = 0, n_kv_heads = 0;
  int batch = 1;    // independent sequences
  int max_len = 0;  // the sequence length ratio budgets refer to
  // An engine's contract for every sequence. It decides the budgets: the policies begin with
  // run_under_contract(run) (core/contract_group.hpp), so run's budget, scope and prompt are not read.
  std::optional<EvictionContract> contract;
  // Under a contract: the decoder's say in each token eviction (core/contract_group.hpp), the
  // choice's seq naming the sequence. kvo::Error without a contract.
  EvictionSteer steer;
};

// Builds a policy for one (sequence, layer, KV head) unit; the default uses make_policy.
using PolicyMaker = std::function<std::unique_ptr<EvictionPolicy>(int seq, int layer, int kv_head)>;

class KvEvictionManager {
 public:
  // kvo::Error for policies a decoder cannot drive (the registry's traits): non-nested ones
  // (h2o-mask), objectives that need the dense attention of the whole sequence ahead of time, and
  // offline policies (oracle, lookahead) without the schedule a closed loop gives them.
  // A custom maker's policies are held to the same rules through their nested() / needs_dense().
  explicit KvEvictionManager(const CacheManagerOptions& options, PolicyMaker maker = {});

  // Step `pos` of sequence `seq` at (layer, kv_head): `positions` are the token positions the
  // query attended (the cache plus pos, ascending) and `probs` its attention over them. Returns
  // the positions that leave the cache now (ascending). Positions must arrive in order 0, 1, ...
  // Under a shared budget a unit's step returns nothing until its group's last unit steps pos.
  std::vector<int> step(int seq, int layer, int kv_head, int pos, std::span<const int> positions,
                        std::span<const double> probs);
  // The positions a shared budget evicted from this unit when another unit completed the group's
  // step (ascending); empty under per-head budgets. The decoder drops them before the unit's next step.
  std::vector<int> take_evicted(int seq, int layer, int kv_head);

  // The positions held after the last step of a unit (ascending).
  const std::vector<int>& held(int seq, int layer, int kv_head) const;
  ResolvedBudget budget(int layer, int kv_head) const;
  // The most positions a unit can hold after a step: its budget, under a shared budget its
  // group's, under a contract its kept set's (at most max_len). A decoder sizes its pools by it.
  int max_held(int layer, int kv_head) const;
  // The units that step in lockstep: run.budget_scope, or under a contract the grouping it imposes.
  BudgetScope budget_scope() const { return o_.contract ? o_.contract->grouping() : o_.run.budget_scope; }
  int prompt_len() const { return o_.run.prompt_len; }
  // Whether the units that step together (budget_scope()) must all step `pos` before any steps
  // further: their group may evict after it (from the prompt's last step on; under a contract,
  // EvictionContract::eviction_steps). Between such steps a unit may run ahead, as a layered
  // prefill does.
  bool lockstep_at(int pos) const;
  const CacheManagerOptions& options() const { return o_; }
  const std::string& policy_name() const { return name_; }

 private:
  size_t index(int seq, int layer, int kv_head) const;  // kvo::Error for a unit that does not exist
  size_t group_of(size_t unit) const;
  bool grouped() const { return group_size_ > 0; }
  // What a group's step evicted from each of its units: the shared budget's answer, or under a
  // contract each unit's positions before and after the contract settled.
  std::vector<std::vector<int>> settle_group(size_t g, int pos);
  CacheManagerOptions o_;
  std::string name_;
  std::vector<std::unique_ptr<EvictionPolicy>> units_;
  std::vector<int> next_pos_;
  // Shared budgets: one group per (sequence, layer) or per sequence, of group_size_ consecutive
  // units; how many of them
  // stepped the position after the last it decided, that position, and what it evicted from units
  // not stepping at the time.
  std::vector<SharedBudgetGroup> groups_;
  std::vector<ContractGroup> contracts_;  // or, under a contract, one per group of units it evicts for together
  size_t group_size_ = 0;
  std::vector<int> group_arrived_, group_settled_;
  std::vector<char> lockstep_;    // by position: lockstep_at
  std::vector<int> last_before_;  // by position: the last lockstep position before it (or the start's)
  std::vector<std::vector<int>> pending_;
};

}  // namespace kvo
