// One budget shared by several cache units (the KV heads of a layer, or every unit of a model):
// after each step the group evicts, across its units, the tokens of lowest eviction score until it
// holds at most the sum of its units' budgets. Replay, the eviction manager and the decoder drive
// their groups through it, so a shared budget means the same thing everywhere.
#pragma once
#include <vector>

#include "kvo/core/policy.hpp"

namespace kvo {

class SharedBudgetGroup {
 public:
  // Units begun with PolicySetup::group_evicts, nested, with a per-token score (the registry's
  // prefill_score trait); they must outlive the group. kvo::Error otherwise.
  SharedBudgetGroup(std::vector<EvictionPolicy*> units, int prompt_len);

  // After every unit observed step i: while the group holds more than its capacity, the lowest
  // eviction_scores() across the units leave (each unit's protected recent window scores +inf).
  // Scores are read once per step. Ties: the older token, then the earlier unit. The prompt is held
  // whole until its last step (i < prompt_len - 1 evicts nothing). Returns each unit's evicted
  // tokens, ascending.
  std::vector<std::vector<int>> settle(int i);

  long capacity() const { return capacity_; }  // the sum of the units' budgets
  long held() const;                           // tokens the units hold now
  size_t size() const { return units_.size(); }

 private:
  std::vector<NestedPolicy*> units_;
  int prompt_len_;
  long capacity_ = 0;
};

}  // namespace kvo
