#include "kvo/core/cache_manager.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

#include "kvo/core/error.hpp"
#include "kvo/core/policies.hpp"

namespace kvo {

KvEvictionManager::KvEvictionManager(const CacheManagerOptions& options, PolicyMaker maker) : o_(options) {
  // Under a contract the policies begin with the run replay gives them under the same contract.
  if (o_.contract && !maker) o_.run = run_under_contract(o_.run, *o_.contract);
  const CacheManagerOptions& o = o_;
  require(o.n_layers > 0 && o.n_kv_heads > 0 && o.batch > 0, "cache manager: layers, KV heads and batch must be > 0");
  require(o.max_len > 0, "cache manager: max_len (the length ratio budgets refer to) must be > 0");
  const PolicyTraits& traits = policy_traits(o.run.policy.id);
  const bool custom = static_cast<bool>(maker);  // its policies answer for themselves below
  const bool shared = o.run.budget_scope != BudgetScope::Head || o.contract.has_value();
  require(!o.steer || o.contract.has_value(), "cache manager: an eviction steer needs a contract (options.contract)");
  if (!custom) {
    const std::string name = kvo::policy_name(o.run.policy.id);
    const auto drivable = [] { return policy_names_where([](const PolicyTraits& t) { return t.decoder; }); };
    // An offline policy runs along the schedule a closed loop computed from the full cache's trace
    // (PolicySpec::schedule); without one no decoder can drive it.
    const bool scheduled = traits.offline && o.run.policy.schedule != nullptr;
    if (traits.offline && !scheduled)
      throw Error("policy " + name +
                  " follows a schedule computed from the whole recorded sequence, so a decoder cannot drive it online "
                  "(kvoracle eval and tasks run drive it from the full cache's trace; decoder policies: " +
                  drivable() + ")");
    if (!traits.nested)
      throw Error("policy " + name +
                  " lets evicted tokens come back; a decoder cannot drive it (decoder policies: " + drivable() + ")");
    require((traits.decoder || scheduled) && !needs_dense(o.run.policy),
            "policy " + name + " needs the dense attention of the whole sequence; a decoder cannot drive it");
    o_.run.validate_budget_scope(SharedBudgets::Allowed);
    maker = [&](int, int, int) { return make_policy(o.run.policy); };
  }
  const size_t count = static_cast<size_t>(o.batch) * o.n_layers * o.n_kv_heads;
  units_.reserve(count);
  next_pos_.assign(count, 0);
  for (int s = 0; s < o.batch; ++s)
    for (int l = 0; l < o.n_layers; ++l)
      for (int h = 0; h < o.n_kv_heads; ++h) {
        auto p = maker(s, l, h);
        if (custom) {
          require(p->nested(), "policy " + p->name() + " lets evicted tokens come back; a decoder cannot drive it");
          require(!p->needs_dense(), "policy " + p->name() +
                                         " needs the dense attention of the whole sequence; a decoder cannot drive it");
        }
        PolicySetup setup;
        setup.n = o.max_len;
        setup.budget = o.run.unit_budget(o.max_len, l, h);
        setup.prompt_len = o.run.prompt_len;
        setup.seed = o.run.seed + units_.size();
        setup.layer = l;
        setup.unit_head = h;
        setup.group_evicts = shared;
        p->begin(setup);
        name_ = p->name();
        units_.push_back(std::move(p));
      }
  if (!shared) return;
  // A sequence's groups are budget_scope.hpp's sharing units, each a run of consecutive units;
  // group g of the manager is then units g * group_size_ .. (g + 1) * group_size_ - 1.
  const size_t per_seq = static_cast<size_t>(o.n_layers) * static_cast<size_t>(o.n_kv_heads);
  const auto sharing =
      sharing_units(budget_scope(), static_cast<size_t>(o.n_layers), static_cast<size_t>(o.n_kv_heads));
  group_size_ = sharing.front().size();
  for (int seq = 0; seq < o.batch; ++seq)
    for (const std::vector<size_t>& set : sharing) {
      std::vector<EvictionPolicy*> members;
      std::vector<ContractUnit> keys;
      for (size_t m : set) {
        members.push_back(units_[static_cast<size_t>(seq) * per_seq + m].get());
        keys.push_back({static_cast<int>(m / o.n_kv_heads), static_cast<int>(m % o.n_kv_heads)});
      }
      if (o.contract) {
        contracts_.emplace_back(std::move(members), keys, *o.contract, o.max_len);  // refuses what cannot obey it
        if (o_.steer) {
          contracts_.back().set_steer([steer = o_.steer, seq](const EvictionChoice& choice, std::vector<int>& tokens) {
            EvictionChoice c = choice;
            c.seq = seq;
            steer(c, tokens);
          });
        }
      } else
        groups_.emplace_back(std::move(members), o.run.prompt_len);  // refuses policies without a score
    }
  const size_t n_groups = count / group_size_;
  group_arrived_.assign(n_groups, 0);
  const int start = std::max(o.run.prompt_len, 1) - 2;  // the first decision: prompt_len - 1
  group_settled_.assign(n_groups, start);
  lockstep_.assign(static_cast<size_t>(o.max_len), 0);
  const std::vector<char> evicts = o.contract ? o.contract->eviction_steps(o.max_len) : std::vector<char>();
  for (int i = std::max(o.run.prompt_len - 1, 0); i < o.max_len; ++i)
    lockstep_[static_cast<size_t>(i)] = o.contract ? evicts[static_cast<size_t>(i)] : 1;
  last_before_.assign(static_cast<size_t>(o.max_len), start);
  for (int i = 1; i < o.max_len; ++i)
    last_before_[static_cast<size_t>(i)] =
        lockstep_[static_cast<size_t>(i - 1)] ? i - 1 : last_before_[static_cast<size_t>(i - 1)];
  pending_.resize(count);
}

size_t KvEvictionManager::index(int seq, int layer, int kv_head) const {
  require(seq >= 0 && seq < o_.batch && layer >= 0 && layer < o_.n_layers && kv_head >= 0 && kv_head < o_.n_kv_heads,
          "cache manager: no unit (" + std::to_string(seq) + ", " + std::to_string(layer) + ", " +
              std::to_string(kv_head) + ")");
  return (static_cast<size_t>(seq) * o_.n_layers + layer) * o_.n_kv_heads + kv_head;
}

size_t KvEvictionManager::group_of(size_t unit) const { return unit / group_size_; }

bool KvEvictionManager::lockstep_at(int pos) const {
  return grouped() && pos >= 0 && pos < o_.max_len && lockstep_[static_cast<size_t>(pos)];
}

std::vector<int> KvEvictionManager::step(int seq, int layer, int kv_head, int pos, std::span<const int> positions,
                                         std::span<const double> probs) {
  const size_t u = index(seq, layer, kv_head);
  EvictionPolicy& p = *units_[u];
  int& next = next_pos_[u];
  const std::string where = "layer " + std::to_string(layer) + ", KV head " + std::to_string(kv_head);
  require(pos == next, "cache manager: step " + std::to_string(pos) + " arrived, expected " + std::to_string(next));
  require(pos < o_.max_len,
          "cache manager: position " + std::to_string(pos) + " beyond max_len " + std::to_string(o_.max_len));
  require(positions.size() == probs.size() && !positions.empty() && positions.back() == pos,
          "cache manager: the attended positions must end with the new one and match the probabilities");
  const size_t g = grouped() ? group_of(u) : 0;
  const bool settles = lockstep_at(pos);
  if (grouped()) {
    // A group that may evict at a position must hear every unit before any of them moves on.
    const int last = last_before_[static_cast<size_t>(pos)];
    require(group_settled_[g] == last, "cache manager: " + where + " stepped to " + std::to_string(pos) +
                                           " before every unit sharing its budget stepped " + std::to_string(last) +
                                           " (step a shared budget's units in lockstep)");
  }
  if (grouped())
    require(pending_[u].empty(), "cache manager: " + where + " stepped before its evictions were taken (take_evicted)");
  const std::vector<int> before(positions.begin(), positions.end());
  require(before == p.attended(pos), "cache manager: the decoder holds positions the policy did not keep (" + where +
                                         ", step " + std::to_string(pos) + ")");
  p.observe(pos, positions, probs);
  ++next;
  std::vector<int> gone;
  if (grouped()) {
    if (!settles || ++group_arrived_[g] < static_cast<int>(group_size_)) return gone;
    std::vector<std::vector<int>> out = settle_group(g, pos);
    group_arrived_[g] = 0;
    group_settled_[g] = pos;
    for (size_t m = 0; m < out.size(); ++m) {
      const size_t v = g * group_size_ + m;  // a group's units are consecutive
      if (v == u) {
        gone = std::move(out[m]);
      } else {
        pending_[v] = std::move(out[m]);
      }
    }
    return gone;
  }
  const auto& kept = p.cache();
  std::set_difference(before.begin(), before.end(), kept.begin(), kept.end(), std::back_inserter(gone));
  return gone;
}

std::vector<std::vector<int>> KvEvictionManager::settle_group(size_t g, int pos) {
  if (contracts_.empty()) return groups_[g].settle(pos);
  const size_t first = g * group_size_;
  std::vector<std::vector<int>> held(group_size_), out(group_size_);
  for (size_t m = 0; m < group_size_; ++m) held[m] = units_[first + m]->cache();
  contracts_[g].settle(pos);
  for (size_t m = 0; m < group_size_; ++m) {
    const auto& kept = units_[first + m]->cache();
    std::set_difference(held[m].begin(), held[m].end(), kept.begin(), kept.end(), std::back_inserter(out[m]));
  }
  return out;
}

std::vector<int> KvEvictionManager::take_evicted(int seq, int layer, int kv_head) {
  const size_t u = index(seq, layer, kv_head);
  if (pending_.empty()) return {};
  return std::exchange(pending_[u], {});
}

const std::vector<int>& KvEvictionManager::held(int seq, int layer, int kv_head) const {
  return units_[index(seq, layer, kv_head)]->cache();
}

ResolvedBudget KvEvictionManager::budget(int layer, int kv_head) const {
  return o_.run.unit_budget(o_.max_len, layer, kv_head);
}

int KvEvictionManager::max_held(int layer, int kv_head) const {
  if (!grouped()) return budget(layer, kv_head).total;
  if (o_.contract) {
    const long most = static_cast<long>(o_.contract->most_held(o_.max_len)) *
                      static_cast<long>(contracts_[group_of(index(0, layer, kv_head))].widest_budget_group());
    return static_cast<int>(std::min<long>(most, o_.max_len));
  }
  return static_cast<int>(std::min<long>(groups_[group_of(index(0, layer, kv_head))].capacity(), o_.max_len));
}

}  // namespace kvo
