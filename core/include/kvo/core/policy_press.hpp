// A kvoracle policy used as a prefill press, kvpress's protocol: the policy replayed over the prompt
// on KV-head units with the prompt held whole, cut once after its last token to kvpress's kept
// count. Also the one rule that reads a name as a press, a policy or the prefill optimum.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "kvo/core/policy_registry.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/run_config.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

enum class PrefillSetKind { Press, Policy, Optimum };

struct PrefillSetName {
  PrefillSetKind kind = PrefillSetKind::Policy;
  PressId press = PressId::SnapKV;  // kind == Press
  PolicyId policy = PolicyId::H2O;  // kind == Policy
};

// A press's or a policy's registry name, "optimum", or a qualified "press:NAME" / "policy:NAME". A
// bare name that both tables hold is refused in one line naming both spellings; so is an unknown one.
PrefillSetName parse_prefill_set(std::string_view name);
// True when a press and a policy share this bare name.
bool press_and_policy_share(std::string_view name);
// The name shown in tables and JSON: bare, or qualified when a press and a policy share it.
std::string prefill_set_label(const PrefillSetName& set);

// Empty when policy `id` can cut a prompt to kvpress's count at this compression ratio; otherwise
// why not, in one line (an offline policy, or one that keeps every token at a ratio > 0).
std::string policy_press_refusal(PolicyId id, double compression_ratio);

// Per (layer, KV head) of the trace, layer-major: the k prompt positions (of P) policy `id` holds
// after the prompt, ascending, exactly k of them (every position when k >= P). The run's policy
// parameters and seed come from `base`; a policy whose budget counts the incoming token
// (budget_counts_next) runs with k + 1 slots, so that it, too, holds k prompt tokens; at k = P - 1
// it would hold all P, and is refused. kvo::Error when the policy cannot (policy_press_refusal, that
// corner), or for k < 1.
std::vector<std::vector<int>> policy_prefill_kept(const Trace& trace, const RunConfig& base, PolicyId id, int P, int k);

// Per (layer, KV head), layer-major: the score [P] whose top-k is that cut, for a policy with the
// prefill_score trait (h2o, tova, scissorhands): its eviction_scores() right after the cut to k, the
// recent window at +inf. k enters through the recent window a budget resolves. Ties: the policy
// evicts the older of equal scores (a top-k by score alone may keep either). kvo::Error for any
// other policy (naming those that are scores), k >= P, and as policy_prefill_kept.
std::vector<std::vector<double>> policy_prefill_scores(const Trace& trace, const RunConfig& base, PolicyId id, int P,
                                                       int k);
std::string prefill_score_policies();  // "h2o, h2o-realdrop, ..." for messages

}  // namespace kvo
