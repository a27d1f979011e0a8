// A kvoracle policy as a prefill press (core/policy_press.hpp): kvpress's kept count for every
// policy that can cut a prompt, refusals for those that cannot, and the one name rule for presses,
// policies and the optimum (issue 30: the masking code's H2O kept k - 1, the full cache ignored the
// ratio, and a bare name shared by a press and a policy silently meant the press).
#include "kvo/core/policy_press.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "kvo/core/error.hpp"
#include "kvo/core/replay.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

// One layer, 4 query heads over 2 KV heads, no prompt metadata.
Trace prompt_trace(int n, std::uint64_t seed) { return test::synthetic_layer(4, 2, n, 32, 0, seed); }

// The bare names a press and a policy share, read off the two tables.
std::vector<std::string> shared_names() {
  std::vector<std::string> out;
  for (const PolicyEntry& e : policy_table())
    if (find_press(e.name)) out.emplace_back(e.name);
  return out;
}

RunConfig base_config() {
  RunConfig c;
  c.budget = Budget::parse("8");
  return c;
}

}  // namespace

TEST(PolicyPress, EveryPolicyThatCanCutAPromptKeepsKvpressCount) {
  const Trace tr = prompt_trace(64, 3);
  const int P = 64;
  for (const PolicyEntry& e : policy_table()) {
    for (double ratio : {0.2, 0.5, 0.8, 0.95}) {
      const int k = press_n_kept(P, ratio);
      if (!policy_press_refusal(e.id, ratio).empty()) {
        EXPECT_THROW(policy_prefill_kept(tr, base_config(), e.id, P, k), Error) << e.name;
        continue;
      }
      const auto kept = policy_prefill_kept(tr, base_config(), e.id, P, k);
      ASSERT_EQ(kept.size(), static_cast<size_t>(tr.n_layers * tr.n_kv_heads)) << e.name;
      for (const auto& s : kept) {
        ASSERT_EQ(static_cast<int>(s.size()), k) << e.name << " at ratio " << ratio;
        EXPECT_TRUE(std::is_sorted(s.begin(), s.end())) << e.name;
        EXPECT_TRUE(std::adjacent_find(s.begin(), s.end()) == s.end()) << e.name;
        EXPECT_GE(s.front(), 0) << e.name;
        EXPECT_LT(s.back(), P) << e.name;
      }
    }
  }
}

TEST(PolicyPress, TheMaskingCodeHoldsItsPromptTokensOfKPlusOneSlots) {
  // h2o-mask's budget counts the incoming token: with k + 1 slots its cache after the prompt holds
  // k prompt tokens, which is what the press keeps (and never the k - 1 that k slots hold).
  const Trace tr = prompt_trace(48, 5);
  const int P = 48, k = 12;
  ReplayOptions ro;
  ro.run = base_config().with_policy(PolicyId::H2OMask);
  ro.run.budget = Budget::parse(std::to_string(k + 1));
  ro.run.gqa = GqaMode::KvMean;
  ro.run.prompt_len = P;
  std::vector<std::vector<int>> want(static_cast<size_t>(tr.n_layers * tr.n_kv_heads));
  ro.on_step = [&](int layer, int kv, int step, const EvictionPolicy& p) {
    if (step == P - 1) want[static_cast<size_t>(layer * tr.n_kv_heads + kv)] = p.cache();
  };
  replay(tr, ro);
  const auto kept = policy_prefill_kept(tr, base_config(), PolicyId::H2OMask, P, k);
  for (size_t u = 0; u < kept.size(); ++u) {
    auto w = want[u];
    std::sort(w.begin(), w.end());
    EXPECT_EQ(kept[u], w) << u;
    EXPECT_EQ(static_cast<int>(kept[u].size()), k);
  }
}

TEST(PolicyPress, RefusesWhatCannotKeepKvpressCountAndKeepsAllAtKAtLeastP) {
  EXPECT_NE(policy_press_refusal(PolicyId::Full, 0.5).find("keeps every token"), std::string::npos);
  EXPECT_EQ(policy_press_refusal(PolicyId::Full, 0.0), "");
  EXPECT_NE(policy_press_refusal(PolicyId::Oracle, 0.5).find("offline"), std::string::npos);
  EXPECT_EQ(policy_press_refusal(PolicyId::H2O, 0.5), "");
  const Trace tr = prompt_trace(32, 1);
  EXPECT_THROW(policy_prefill_kept(tr, base_config(), PolicyId::Full, 32, 16), Error);
  EXPECT_THROW(policy_prefill_kept(tr, base_config(), PolicyId::H2O, 32, 0), Error);
  EXPECT_THROW(policy_prefill_kept(tr, base_config(), PolicyId::H2O, 33, 8), Error);
  // The masking code at k = P - 1: its k + 1 slots hold the whole prompt, so it cannot cut one token.
  EXPECT_THROW(policy_prefill_kept(tr, base_config(), PolicyId::H2OMask, 32, 31), Error);
  EXPECT_EQ(policy_prefill_kept(tr, base_config(), PolicyId::H2O, 32, 31).front().size(), 31u);
  std::vector<int> all(32);
  std::iota(all.begin(), all.end(), 0);
  for (const auto& s : policy_prefill_kept(tr, base_config(), PolicyId::Full, 32, 32)) EXPECT_EQ(s, all);
}

TEST(PolicyPress, ANameSharedByAPressAndAPolicyMustBeQualified) {
  const std::vector<std::string> shared = shared_names();
  ASSERT_FALSE(shared.empty());  // today the TOVA and random rules: each is both a policy and a press
  for (const std::string& name : shared) {
    EXPECT_TRUE(press_and_policy_share(name));
    try {
      parse_prefill_set(name);
      ADD_FAILURE() << name << " resolved silently";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("policy:" + name), std::string::npos) << what;
      EXPECT_NE(what.find("press:" + name), std::string::npos) << what;
    }
    const PrefillSetName press = parse_prefill_set("press:" + name);
    const PrefillSetName policy = parse_prefill_set("policy:" + name);
    EXPECT_EQ(press.kind, PrefillSetKind::Press);
    EXPECT_EQ(press.press, parse_press(name));
    EXPECT_EQ(policy.kind, PrefillSetKind::Policy);
    EXPECT_EQ(policy.policy, parse_policy(name));
    EXPECT_EQ(prefill_set_label(press), "press:" + name);
    EXPECT_EQ(prefill_set_label(policy), "policy:" + name);
  }
  for (const PressEntry& e : press_table())
    if (!press_and_policy_share(e.name)) {
      EXPECT_EQ(parse_prefill_set(e.name).kind, PrefillSetKind::Press) << e.name;
      EXPECT_EQ(parse_prefill_set(e.kvpress_class).press, e.id) << e.name;
      EXPECT_EQ(prefill_set_label(parse_prefill_set(e.name)), e.name);
      EXPECT_THROW(parse_prefill_set("policy:" + std::string(e.name)), Error) << e.name;
    }
  for (const PolicyEntry& e : policy_table())
    if (!press_and_policy_share(e.name)) {
      EXPECT_EQ(parse_prefill_set(e.name).policy, e.id) << e.name;
      EXPECT_EQ(prefill_set_label(parse_prefill_set(e.name)), e.name);
      EXPECT_THROW(parse_prefill_set("press:" + std::string(e.name)), Error) << e.name;
    }
  EXPECT_EQ(parse_prefill_set("optimum").kind, PrefillSetKind::Optimum);
  EXPECT_THROW(parse_prefill_set("no-such-rule"), Error);
}

// Issue 33: a policy whose cut keeps a top-k of a per-token score gives that score; its top-k is the
// cut at every k (the older of equal scores goes first, as the policy evicts), the recent window
// sits at +inf; a policy that is not a score is refused in one line naming those that are.
TEST(PolicyPress, AScorePolicysTopKIsItsCut) {
  const Trace tr = prompt_trace(64, 5);
  const int P = 64;
  RunConfig base = base_config();
  base.budget = Budget::parse("8", "25%");  // a recent window of a quarter of k
  int scored = 0;
  for (const PolicyEntry& e : policy_table()) {
    if (!e.traits.prefill_score) {
      if (e.traits.offline) continue;
      EXPECT_NE(test::error_of([&] { policy_prefill_scores(tr, base, e.id, P, 8); }).find("is not a score"),
                std::string::npos)
          << e.name;
      continue;
    }
    ++scored;
    for (int k : {1, 8, 20, 63}) {
      SCOPED_TRACE(std::string(e.name) + " at k = " + std::to_string(k));
      const auto kept = policy_prefill_kept(tr, base, e.id, P, k);
      const auto scores = policy_prefill_scores(tr, base, e.id, P, k);
      ASSERT_EQ(scores.size(), kept.size());
      for (size_t u = 0; u < kept.size(); ++u) {
        ASSERT_EQ(scores[u].size(), static_cast<size_t>(P));
        std::vector<int> order(P);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
          return scores[u][a] != scores[u][b] ? scores[u][a] > scores[u][b] : a > b;  // the later of equals stays
        });
        std::vector<int> top(order.begin(), order.begin() + k);
        std::sort(top.begin(), top.end());
        EXPECT_EQ(top, kept[u]) << "unit " << u;
      }
    }
  }
  EXPECT_GE(scored, 3);
  EXPECT_NE(test::error_of([&] { policy_prefill_scores(tr, base, PolicyId::H2O, P, P); }).find("must be below"),
            std::string::npos);
}
