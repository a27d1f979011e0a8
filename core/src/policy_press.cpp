#include "kvo/core/policy_press.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>

#include "kvo/core/error.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo {

bool press_and_policy_share(std::string_view name) { return find_press(name) && find_policy(name); }

PrefillSetName parse_prefill_set(std::string_view name) {
  PrefillSetName s;
  if (name.starts_with(kPressPrefix)) {
    s.kind = PrefillSetKind::Press;
    s.press = parse_press(name.substr(kPressPrefix.size()));
    return s;
  }
  if (name.starts_with(kPolicyPrefix)) {
    s.kind = PrefillSetKind::Policy;
    s.policy = parse_policy(name.substr(kPolicyPrefix.size()));
    return s;
  }
  if (name == "optimum") {
    s.kind = PrefillSetKind::Optimum;
    return s;
  }
  const std::string n(name);
  require(!press_and_policy_share(name),
          "'" + n + "' is both a kvoracle policy and a kvpress press: write 'policy:" + n +
              "' (the policy replayed over the prompt) or 'press:" + n + "' (kvpress's press)");
  if (const auto press = find_press(name)) {
    s.kind = PrefillSetKind::Press;
    s.press = *press;
    return s;
  }
  const auto policy = find_policy(name);
  require(policy.has_value(), "unknown policy or press '" + n +
                                  "' (policies: " + policy_names_where([](const PolicyTraits&) { return true; }) +
                                  "; presses: " + press_names_joined() + "; or optimum)");
  s.kind = PrefillSetKind::Policy;
  s.policy = *policy;
  return s;
}

std::string prefill_set_label(const PrefillSetName& set) {
  switch (set.kind) {
    case PrefillSetKind::Optimum:
      return "optimum";
    case PrefillSetKind::Press: {
      const std::string n = press_name(set.press);
      return press_and_policy_share(n) ? std::string(kPressPrefix) + n : n;
    }
    case PrefillSetKind::Policy:
      break;
  }
  const std::string n = policy_name(set.policy);
  return press_and_policy_share(n) ? std::string(kPolicyPrefix) + n : n;
}

std::string policy_press_refusal(PolicyId id, double compression_ratio) {
  const PolicyTraits& t = policy_traits(id);
  const std::string n = policy_name(id);
  if (t.offline)
    return "policy '" + n +
           "' follows the offline optimum of a whole recorded sequence and cannot cut a prompt; the prefill "
           "optimum is 'optimum' (with a trace of the prompt and its continuation)";
  if (!t.budgeted && compression_ratio > 0)
    return "policy '" + n + "' keeps every token, so it cannot keep kvpress's count at compression ratio " +
           (std::ostringstream() << compression_ratio).str() + "; use compression ratio 0";
  return "";
}

namespace {

// Replays policy `id` over the prompt of every (layer, KV head) with k kept slots (k + 1 when its
// budget counts the next token) and hands each unit's policy to `at_cut` right after the cut.
void replay_prompt_cut(const Trace& trace, const RunConfig& base, PolicyId id, int P, int k,
                       const std::function<void(std::size_t unit, const EvictionPolicy&)>& at_cut) {
  const std::string refusal = policy_press_refusal(id, 1.0 - static_cast<double>(k) / P);
  require(refusal.empty(), refusal);
  const int slots = policy_traits(id).budget_counts_next ? k + 1 : k;
  require(slots < P, "policy '" + policy_name(id) + "' holds every token until its " + std::to_string(slots) +
                         " slots (k + 1, the next token's among them) are full, so it cannot cut a prompt of " +
                         std::to_string(P) + " tokens to kvpress's k = " + std::to_string(k) +
                         "; use a larger compression ratio or a longer prompt");
  ReplayOptions ro;
  ro.run = base.with_policy(id);
  ro.run.budget = base.budget.with_total(Amount{false, static_cast<double>(slots)});
  ro.run.gqa = GqaMode::KvMean;
  ro.run.prompt_len = P;
  ro.run.layers.clear();
  ro.run.heads.clear();
  ro.record_sets = false;
  ro.on_step = [&](int layer, int kv_head, int step, const EvictionPolicy& policy) {
    if (step == P - 1) at_cut(static_cast<std::size_t>(layer * trace.n_kv_heads + kv_head), policy);
  };
  replay(trace, ro);
}

void check_prompt(const Trace& trace, int P, int k) {
  require(k >= 1, "a prefill cut keeps at least one token (k = " + std::to_string(k) + ")");
  require(P >= 1 && P <= trace.n_tokens,
          "the prompt length " + std::to_string(P) + " is outside [1, " + std::to_string(trace.n_tokens) + "]");
}

}  // namespace

std::vector<std::vector<int>> policy_prefill_kept(const Trace& trace, const RunConfig& base, PolicyId id, int P,
                                                  int k) {
  check_prompt(trace, P, k);
  const std::size_t units = static_cast<std::size_t>(trace.n_layers * trace.n_kv_heads);
  if (k >= P) {
    std::vector<int> all(static_cast<std::size_t>(P));
    std::iota(all.begin(), all.end(), 0);
    return std::vector<std::vector<int>>(units, all);
  }
  std::vector<std::vector<int>> kept(units);
  replay_prompt_cut(trace, base, id, P, k, [&](std::size_t u, const EvictionPolicy& policy) {
    for (int j : policy.cache())
      if (j < P) kept[u].push_back(j);
  });
  for (std::size_t u = 0; u < units; ++u) {
    auto& s = kept[u];
    std::sort(s.begin(), s.end());
    require(static_cast<int>(s.size()) == k && std::adjacent_find(s.begin(), s.end()) == s.end(),
            "internal: policy '" + policy_name(id) + "' holds " + std::to_string(s.size()) +
                " prompt tokens of layer " + std::to_string(u / static_cast<std::size_t>(trace.n_kv_heads)) +
                ", KV head " + std::to_string(u % static_cast<std::size_t>(trace.n_kv_heads)) +
                " after the prompt, not kvpress's " + std::to_string(k));
  }
  return kept;
}

std::vector<std::vector<double>> policy_prefill_scores(const Trace& trace, const RunConfig& base, PolicyId id, int P,
                                                       int k) {
  check_prompt(trace, P, k);
  require(policy_traits(id).prefill_score, "policy '" + policy_name(id) +
                                               "' is not a score: its prompt cut is not a top-k of a per-token score "
                                               "(scores: " +
                                               prefill_score_policies() + ")");
  require(k < P, "a policy's scores are read at a cut: k = " + std::to_string(k) + " must be below the prompt's " +
                     std::to_string(P) + " tokens");
  const std::size_t units = static_cast<std::size_t>(trace.n_layers * trace.n_kv_heads);
  std::vector<std::vector<double>> scores(units);
  replay_prompt_cut(trace, base, id, P, k, [&](std::size_t u, const EvictionPolicy& policy) {
    scores[u] = policy.eviction_scores();
    scores[u].resize(static_cast<std::size_t>(P), 0.0);
  });
  return scores;
}

std::string prefill_score_policies() {
  std::vector<std::string> names;
  for (const PolicyEntry& e : policy_table())
    if (e.traits.prefill_score) names.emplace_back(e.name);
  return join_list(names);
}

}  // namespace kvo
