// Policy invariants on random and synthetic traces, and each policy's defining rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/synth.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

namespace {

ReplayResult run(const Trace& tr, const std::string& policy, const std::string& budget, const std::string& recent = "",
                 int prompt = 0, bool probs = false, GqaMode gqa = GqaMode::PerQueryHead, std::uint64_t seed = 0) {
  ReplayOptions o;
  o.run.policy = PolicySpec::named(policy);
  o.run.budget =
      recent.empty() ? Budget(Amount::parse(budget)) : Budget(Amount::parse(budget), Amount::parse(recent, true));
  o.run.prompt_len = prompt;
  o.record_probs = probs;
  o.run.gqa = gqa;
  o.run.seed = seed;
  o.threads = 2;
  return replay(tr, o);
}

std::vector<int> range(int a, int b) {  // [a, b]
  std::vector<int> v;
  for (int j = a; j <= b; ++j) v.push_back(j);
  return v;
}

}  // namespace

// |S_i| <= k, S_i ⊆ S_{i-1} ∪ {i}, at most one new element, no re-entry, the query attends
// S_{i-1} ∪ {i}; during the prefill the prompt is held whole.
TEST(Policies, NestedInvariantsOnRandomAndSyntheticTraces) {
  std::mt19937_64 g(21);
  for (int trial = 0; trial < 12; ++trial) {
    SynthOptions so;
    so.layers = 1;
    so.heads = 2;
    so.kv_heads = 1;
    so.tokens = 24 + static_cast<int>(g() % 40);
    so.head_dim = 16;
    so.prompt_len = 0;
    so.seed = trial;
    const Trace tr = trial % 2 ? synthesize(so) : random_trace(1, 2, 1, so.tokens, 8, trial);
    const int k = 2 + static_cast<int>(g() % (so.tokens / 3));
    const int prompt = static_cast<int>(g() % (so.tokens / 2));
    const std::string recent = std::to_string(g() % (k + 1));
    for (const auto& info : policy_table()) {
      // lookahead is offline in the closed loops but replays on the dense attention like any policy.
      if (!info.traits.nested || !info.traits.budgeted ||
          (info.traits.offline && info.traits.dense == DenseNeed::Never))
        continue;
      const auto r = run(tr, std::string(info.name), std::to_string(k), recent, prompt);
      ASSERT_TRUE(r.nested);
      for (const auto& h : r.heads) {
        std::vector<int> prev;
        for (int i = 0; i < tr.n_tokens; ++i) {
          const auto& s = h.steps[i];
          std::vector<int> g_i = prev;
          g_i.push_back(i);
          ASSERT_EQ(s.attended, g_i) << info.name << " step " << i;
          ASSERT_TRUE(s.reentered.empty()) << info.name;
          if (i < prompt - 1) {
            ASSERT_EQ(s.kept, range(0, i)) << info.name;
          } else {
            ASSERT_LE(static_cast<int>(s.kept.size()), k) << info.name << " step " << i;
            ASSERT_TRUE(std::includes(g_i.begin(), g_i.end(), s.kept.begin(), s.kept.end())) << info.name;
            std::vector<int> fresh;
            std::set_difference(s.kept.begin(), s.kept.end(), prev.begin(), prev.end(), std::back_inserter(fresh));
            ASSERT_LE(fresh.size(), 1u) << info.name;
            ASSERT_EQ(s.kept.size() + s.evicted.size(), g_i.size()) << info.name;
          }
          prev = s.kept;
        }
      }
    }
  }
}

TEST(Policies, WindowKeepsTheMostRecentTokens) {
  const Trace tr = random_trace(1, 1, 1, 40, 8, 1);
  const auto r = run(tr, "window", "7");
  for (int i = 0; i < 40; ++i) EXPECT_EQ(r.heads[0].steps[i].kept, range(std::max(0, i - 6), i));
}

TEST(Policies, StreamingKeepsSinksAndAWindow) {
  const Trace tr = random_trace(1, 1, 1, 40, 8, 2);
  ReplayOptions o;
  o.run.policy = PolicySpec::named("streaming");
  o.run.policy.sinks = 3;
  o.run.budget = Budget(Amount::parse("8"));
  const auto r = replay(tr, o);
  for (int i = 8; i < 40; ++i) {
    std::vector<int> want = {0, 1, 2};
    for (int j = i - 4; j <= i; ++j) want.push_back(j);
    EXPECT_EQ(r.heads[0].steps[i].kept, want) << i;
  }
}

TEST(Policies, FullCacheKeepsEverythingAndRetainsAllMass) {
  const Trace tr = random_trace(1, 2, 2, 30, 8, 3);
  const auto r = run(tr, "full", "5");
  for (int i = 0; i < 30; ++i) {
    EXPECT_EQ(r.heads[1].steps[i].kept, range(0, i));
    EXPECT_NEAR(r.heads[1].steps[i].retained_mass, 1.0, 1e-12);
  }
}

// TOVA evicts the argmin of the current query's renormalised attention over S_{i-1} ∪ {i}.
TEST(Policies, TovaEvictsTheLeastAttendedToken) {
  const Trace tr = random_trace(1, 1, 1, 50, 8, 4, 0.7);
  const auto r = run(tr, "tova", "6", "", 0, true);
  int checked = 0;
  for (const auto& s : r.heads[0].steps) {
    if (s.evicted.empty()) continue;
    ASSERT_EQ(s.evicted.size(), 1u);
    const auto it = std::min_element(s.probs.begin(), s.probs.end());
    EXPECT_EQ(s.attended[it - s.probs.begin()], s.evicted[0]);
    ++checked;
  }
  EXPECT_EQ(checked, 50 - 6);
}

// H2O: the evicted token has the smallest accumulated score outside the recent window, and the
// window is always kept. Scores are recomputed from the recorded probabilities.
TEST(Policies, H2OEvictsTheSmallestAccumulatedScoreOutsideTheWindow) {
  const Trace tr = synthesize(SynthOptions{});
  const auto r = run(tr, "h2o", "24", "8", 0, true);
  for (const auto& h : r.heads) {
    std::vector<double> score(tr.n_tokens, 0.0);
    for (int i = 0; i < tr.n_tokens; ++i) {
      const auto& s = h.steps[i];
      for (size_t t = 0; t < s.attended.size(); ++t) score[s.attended[t]] += s.probs[t];
      for (int j = std::max(0, i - 7); j <= i; ++j)
        ASSERT_TRUE(std::binary_search(s.kept.begin(), s.kept.end(), j)) << "window token " << j << " lost at " << i;
      if (s.evicted.empty()) continue;
      ASSERT_EQ(s.evicted.size(), 1u);
      double best = 1e300;
      int who = -1;
      for (int j : s.attended)
        if (j <= i - 8 && score[j] < best) {  // strict: ties evict the oldest
          best = score[j];
          who = j;
        }
      ASSERT_EQ(s.evicted[0], who) << "step " << i;
    }
  }
}

// The prefill is truncated once: top-h column sums of the full prompt attention over
// [0, P - r) plus the last r prompt tokens.
TEST(Policies, H2OPrefillKeepsTopHeavyPlusRecent) {
  const Trace tr = random_trace(1, 1, 1, 60, 8, 5);
  const int P = 40, k = 12, rec = 4;
  const auto r = run(tr, "h2o", std::to_string(k), std::to_string(rec), P, true);
  std::vector<double> score(P, 0.0);
  for (int i = 0; i < P; ++i) {
    const auto& s = r.heads[0].steps[i];
    ASSERT_EQ(s.attended, range(0, i));
    for (size_t t = 0; t < s.attended.size(); ++t) score[s.attended[t]] += s.probs[t];
  }
  std::vector<int> pool = range(0, P - rec - 1);
  std::stable_sort(pool.begin(), pool.end(), [&](int a, int b) { return score[a] > score[b]; });
  std::vector<int> want(pool.begin(), pool.begin() + (k - rec));
  for (int j = P - rec; j < P; ++j) want.push_back(j);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(r.heads[0].steps[P - 1].kept, want);
  EXPECT_EQ(r.heads[0].steps[P - 1].evicted.size(), static_cast<size_t>(P - k));
}

TEST(Policies, RealDropVariantMakesTheSameDecisionsAsH2O) {
  const Trace tr = synthesize(SynthOptions{});
  const auto a = run(tr, "h2o", "0.2", "", 32);
  const auto b = run(tr, "h2o-realdrop", "0.2", "", 32);
  ASSERT_EQ(a.heads.size(), b.heads.size());
  for (size_t x = 0; x < a.heads.size(); ++x)
    for (int i = 0; i < tr.n_tokens; ++i) ASSERT_EQ(a.heads[x].steps[i].kept, b.heads[x].steps[i].kept);
}

// The masking variant is not nested: the token leaving the window is masked for one step and can
// come back; the replay records each re-entry, and a re-entered token was evicted before.
TEST(Policies, MaskVariantRecordsReentries) {
  const Trace tr = synthesize(SynthOptions{});
  const auto r = run(tr, "h2o-mask", "0.2", "", 0);
  EXPECT_FALSE(r.nested);
  long total = 0;
  for (const auto& h : r.heads) {
    total += h.reentries;
    std::set<int> ever_evicted;
    for (int i = 0; i < tr.n_tokens; ++i) {
      const auto& s = h.steps[i];
      for (int j : s.reentered) EXPECT_TRUE(ever_evicted.count(j)) << "token " << j << " re-entered without eviction";
      for (int j : s.evicted) ever_evicted.insert(j);
      EXPECT_LE(static_cast<int>(s.attended.size()), h.budget.total + 1);
    }
  }
  EXPECT_GT(total, 0);
}

TEST(Policies, RandomIsDeterministicPerSeed) {
  const Trace tr = random_trace(1, 1, 1, 50, 8, 6);
  const auto a = run(tr, "random", "8", "2", 0, false, GqaMode::PerQueryHead, 1);
  const auto b = run(tr, "random", "8", "2", 0, false, GqaMode::PerQueryHead, 1);
  const auto c = run(tr, "random", "8", "2", 0, false, GqaMode::PerQueryHead, 2);
  bool differs = false;
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(a.heads[0].steps[i].kept, b.heads[0].steps[i].kept);
    differs |= a.heads[0].steps[i].kept != c.heads[0].steps[i].kept;
  }
  EXPECT_TRUE(differs);
}

// Grouped-query attention: kv-mean and kv-max share one cache per KV head across its group.
TEST(Policies, GqaAggregationSharesTheCacheAcrossTheGroup) {
  const Trace tr = random_trace(1, 4, 2, 40, 8, 7);
  for (GqaMode m : {GqaMode::KvMean, GqaMode::KvMax}) {
    const auto r = run(tr, "h2o", "8", "", 0, false, m);
    ASSERT_EQ(r.heads.size(), 4u);
    for (int i = 0; i < 40; ++i) {
      EXPECT_EQ(r.heads[0].steps[i].kept, r.heads[1].steps[i].kept);
      EXPECT_EQ(r.heads[2].steps[i].kept, r.heads[3].steps[i].kept);
    }
  }
  const auto q = run(tr, "h2o", "8", "", 0, false, GqaMode::PerQueryHead);
  bool differs = false;
  for (int i = 0; i < 40; ++i) differs |= q.heads[0].steps[i].kept != q.heads[1].steps[i].kept;
  EXPECT_TRUE(differs);
}

// Scissorhands never evicts inside the recent window.
TEST(Policies, ScissorhandsProtectsTheRecentWindow) {
  const Trace tr = synthesize(SynthOptions{});
  const auto r = run(tr, "scissorhands", "20", "6");
  for (const auto& h : r.heads)
    for (int i = 0; i < tr.n_tokens; ++i)
      for (int j : h.steps[i].evicted) EXPECT_LE(j, i - 6);
}

TEST(Policies, UnknownPolicyIsAnError) {
  EXPECT_THROW(PolicySpec::named("lru"), Error);
  try {
    parse_policy("lru");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown policy 'lru' (known: h2o, h2o-realdrop"), std::string::npos);
  }
  PolicySpec oracle = PolicySpec::named("oracle");  // needs a schedule, which only eval computes
  EXPECT_THROW(make_policy(oracle), Error);
}
