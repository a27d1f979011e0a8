// Policies obeying an engine's contract (core/eviction_contract.hpp): the units of one budget group
// observe each step through their own policies, then settle() evicts for them, from every unit of a
// kept set at once, what the contract lets go. Replay drives its groups through it, so a policy's
// value under a contract is measured on the schedule the contract allows (docs/engines.md).
#pragma once
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "kvo/core/eviction_contract.hpp"
#include "kvo/core/policy.hpp"
#include "kvo/core/run_config.hpp"

namespace kvo {

// The run each unit's policy begins with under a contract: its own rule keeps k and the window
// still protected when a delayed eviction decided now takes effect; budgets per head, no prompt
// held whole (the contract's sinks and prompt_len say what is protected). kvo::Error for a policy
// without a per-token score to evict by.
RunConfig run_under_contract(RunConfig run, const EvictionContract& contract);

// An engine's say in what a contract evicts at a step. The steer sees the choice (the step, the
// kept set's units, the tokens the contract could evict and every token's summed eviction score)
// and the tokens the contract chose (ascending), and may replace them with as many other
// candidates. An engine that pins tokens keeps them this way; a comparison of two implementations'
// decisions makes one follow the other (docs/llama.md).
struct EvictionChoice {
  int seq = 0;  // the sequence (set by KvEvictionManager; 0 in a ContractGroup alone)
  int step = 0;
  std::span<const ContractUnit> units;  // the kept set's units
  std::span<const int> candidates;      // held, past the sinks, outside the window, not already decided; ascending
  std::span<const double> score;        // by token: the set's summed eviction score
};
using EvictionSteer = std::function<void(const EvictionChoice& choice, std::vector<int>& tokens)>;

class ContractGroup {
 public:
  // `units`: nested policies begun with PolicySetup::group_evicts and a per-token score (the
  // registry's prefill_score trait), which must outlive the group, and each one's layer and KV
  // head (`keys`): the group's kept sets and budget groups are the contract's over them. kvo::Error
  // otherwise, or from contract.validate(n).
  ContractGroup(std::vector<EvictionPolicy*> units, std::span<const ContractUnit> keys, EvictionContract contract,
                int n);

  // After every unit observed step i. Where the contract evicts at step i (every step, or after a
  // compression step), the kept sets' tokens of lowest summed eviction score leave, or whole pages
  // of lowest summed score, until the group holds at most its budget (k per set, the sinks and the
  // window never leaving); with a delay, they are decided now and leave d steps later, so that a
  // set never holds more than k. Admission only: the token leaving the window is admitted while
  // the group has room, first come first served, and dropped otherwise. Ties: the older token (or
  // page), then the earlier set.
  void settle(int i);
  // Lets `steer` replace each token eviction settle() decides (kvo::Error under pages or admission
  // only, which evict no single token by score).
  void set_steer(EvictionSteer steer);

  // The kept set's tokens now (every unit of a set holds the same).
  const std::vector<int>& held(size_t set) const;
  size_t sets() const { return sets_.size(); }
  // The most kept sets sharing one budget (1 when each set has its own).
  size_t widest_budget_group() const;

 private:
  void evict(size_t set, std::vector<int> tokens);  // from every unit of the set, now
  void settle_admission(int i, const std::vector<size_t>& group, long& admitted);
  void settle_pages(int i, const std::vector<size_t>& group);
  void settle_tokens(int i, const std::vector<size_t>& group);
  // A set's tokens by their summed eviction score over its units (kvo::Error for a policy without one).
  std::vector<double> set_scores(size_t set) const;

  std::vector<NestedPolicy*> units_;
  std::vector<std::vector<size_t>> sets_;
  std::vector<std::vector<ContractUnit>> set_units_;  // each set's units' layer and KV head
  EvictionSteer steer_;
  std::vector<std::vector<size_t>> groups_;  // budget groups: indexes of sets
  EvictionContract c_;
  int n_;
  std::vector<char> compress_after_;                       // by step: the contract compresses after it
  std::vector<std::vector<std::pair<int, int>>> pending_;  // per set: (step it leaves, token) decided
  std::vector<std::vector<char>> is_pending_;              // per set, by token
  std::vector<long> admitted_;                             // admission only, per budget group
};

}  // namespace kvo
