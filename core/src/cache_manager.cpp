#include "kvo/core/cache_manager.hpp"

#include <algorithm>
#include <iterator>

#include "kvo/core/error.hpp"
#include "kvo/core/policies.hpp"

namespace kvo {

KvEvictionManager::KvEvictionManager(const CacheManagerOptions& o, PolicyMaker maker) : o_(o) {
  require(o.n_layers > 0 && o.n_kv_heads > 0 && o.batch > 0, "cache manager: layers, KV heads and batch must be > 0");
  require(o.max_len > 0, "cache manager: max_len (the length ratio budgets refer to) must be > 0");
  const PolicyTraits& traits = policy_traits(o.run.policy.id);
  const bool custom = static_cast<bool>(maker);  // its policies answer for themselves below
  if (!custom) {
    require(traits.nested, "policy " + kvo::policy_name(o.run.policy.id) +
                               " lets evicted tokens come back; a decoder cannot drive it (decoder policies: " +
                               policy_names_where([](const PolicyTraits& t) { return t.decoder; }) + ")");
    require(traits.decoder && !needs_dense(o.run.policy),
            "policy " + kvo::policy_name(o.run.policy.id) +
                " needs the dense attention of the whole sequence; a decoder cannot drive it");
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
        p->begin(setup);
        name_ = p->name();
        units_.push_back(std::move(p));
      }
}

EvictionPolicy& KvEvictionManager::unit(int seq, int layer, int kv_head) {
  require(seq >= 0 && seq < o_.batch && layer >= 0 && layer < o_.n_layers && kv_head >= 0 && kv_head < o_.n_kv_heads,
          "cache manager: no unit (" + std::to_string(seq) + ", " + std::to_string(layer) + ", " +
              std::to_string(kv_head) + ")");
  return *units_[(static_cast<size_t>(seq) * o_.n_layers + layer) * o_.n_kv_heads + kv_head];
}

const EvictionPolicy& KvEvictionManager::unit(int seq, int layer, int kv_head) const {
  return const_cast<KvEvictionManager*>(this)->unit(seq, layer, kv_head);
}

std::vector<int> KvEvictionManager::step(int seq, int layer, int kv_head, int pos, std::span<const int> positions,
                                         std::span<const double> probs) {
  EvictionPolicy& p = unit(seq, layer, kv_head);
  int& next = next_pos_[(static_cast<size_t>(seq) * o_.n_layers + layer) * o_.n_kv_heads + kv_head];
  require(pos == next, "cache manager: step " + std::to_string(pos) + " arrived, expected " + std::to_string(next));
  require(pos < o_.max_len,
          "cache manager: position " + std::to_string(pos) + " beyond max_len " + std::to_string(o_.max_len));
  require(positions.size() == probs.size() && !positions.empty() && positions.back() == pos,
          "cache manager: the attended positions must end with the new one and match the probabilities");
  const std::vector<int> before(positions.begin(), positions.end());
  require(before == p.attended(pos), "cache manager: the decoder holds positions the policy did not keep (layer " +
                                         std::to_string(layer) + ", KV head " + std::to_string(kv_head) + ", step " +
                                         std::to_string(pos) + ")");
  p.observe(pos, positions, probs);
  ++next;
  std::vector<int> gone;
  const auto& kept = p.cache();
  std::set_difference(before.begin(), before.end(), kept.begin(), kept.end(), std::back_inserter(gone));
  return gone;
}

const std::vector<int>& KvEvictionManager::held(int seq, int layer, int kv_head) const {
  return unit(seq, layer, kv_head).cache();
}

ResolvedBudget KvEvictionManager::budget(int layer, int kv_head) const {
  return o_.run.unit_budget(o_.max_len, layer, kv_head);
}

}  // namespace kvo
