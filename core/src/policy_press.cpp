#include "kvo/core/policy_press.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "kvo/core/error.hpp"
#include "kvo/core/replay.hpp"

namespace kvo {
namespace {

constexpr std::string_view kPressPrefix = "press:";
constexpr std::string_view kPolicyPrefix = "policy:";

}  // namespace

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

std::vector<std::vector<int>> policy_prefill_kept(const Trace& trace, const RunConfig& base, PolicyId id, int P,
                                                  int k) {
  require(k >= 1, "a prefill cut keeps at least one token (k = " + std::to_string(k) + ")");
  require(P >= 1 && P <= trace.n_tokens,
          "the prompt length " + std::to_string(P) + " is outside [1, " + std::to_string(trace.n_tokens) + "]");
  const std::size_t units = static_cast<std::size_t>(trace.n_layers * trace.n_kv_heads);
  if (k >= P) {
    std::vector<int> all(static_cast<std::size_t>(P));
    std::iota(all.begin(), all.end(), 0);
    return std::vector<std::vector<int>>(units, all);
  }
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
  std::vector<std::vector<int>> kept(units);
  ro.on_step = [&](int layer, int kv_head, int step, const EvictionPolicy& policy) {
    if (step != P - 1) return;
    std::vector<int> s;
    for (int j : policy.cache())
      if (j < P) s.push_back(j);
    kept[static_cast<std::size_t>(layer * trace.n_kv_heads + kv_head)] = std::move(s);
  };
  replay(trace, ro);
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

}  // namespace kvo
