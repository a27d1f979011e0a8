// The paper's ablation policies (heavy, anti-h2o, oldest, lookahead, the Sparse Transformer's patterns):
// each policy's rule transcribed independently and compared with what it keeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/policies.hpp"
#include "kvo/core/replay.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

namespace {

ReplayResult replay_policy(const Trace& tr, const std::string& policy, int k, int r) {
  ReplayOptions o;
  o.run.policy = PolicySpec::named(policy);
  o.run.budget = Budget(Amount::parse(std::to_string(k)), Amount::parse(std::to_string(r), true));
  o.threads = 1;
  return replay(tr, o);
}

// Drives a policy directly with probabilities from `prob(i, j)` (renormalised over the attended
// keys); returns the cache after each step.
template <class Prob>
std::vector<std::vector<int>> drive(EvictionPolicy& p, int n, int k, int r, Prob prob) {
  PolicySetup s;
  s.n = n;
  s.budget = ResolvedBudget{k, k - r, r};
  p.begin(s);
  std::vector<std::vector<int>> caches;
  for (int i = 0; i < n; ++i) {
    const std::vector<int> att = p.attended(i);
    std::vector<double> w(att.size());
    for (size_t t = 0; t < att.size(); ++t) w[t] = prob(i, att[t]);
    const double z = std::accumulate(w.begin(), w.end(), 0.0);
    for (double& x : w) x /= z;
    p.observe(i, att, w);
    caches.push_back(p.cache());
  }
  return caches;
}

}  // namespace

// lookahead: h2o's rule (argmin outside the window, ties oldest) on the column sums of the whole
// dense attention, transcribed step by step.
TEST(PolicyAblations, LookaheadRanksByTheAttentionOfEveryQuery) {
  const int n = 48, k = 12, r = 4;
  const Trace tr = random_trace(1, 1, 1, n, 8, 5, 3.0);
  const Eigen::MatrixXd a = dense_attention(HeadView(tr, 0, 0));
  const auto res = replay_policy(tr, "lookahead", k, r);
  std::vector<int> cache;
  for (int i = 0; i < n; ++i) {
    cache.push_back(i);
    if (static_cast<int>(cache.size()) > k) {
      size_t best = 0;
      for (size_t p = 1; p + r < cache.size(); ++p)
        if (a.col(cache[p]).sum() < a.col(cache[best]).sum()) best = p;
      cache.erase(cache.begin() + static_cast<long>(best));
    }
    ASSERT_EQ(res.heads[0].steps[static_cast<size_t>(i)].kept, cache) << "step " << i;
  }
}

TEST(PolicyAblations, LookaheadWithoutTheDenseAttentionIsRefused) {
  LookaheadPolicy p;
  PolicySetup s;
  s.n = 8;
  s.budget = ResolvedBudget{4, 2, 2};
  EXPECT_THROW(p.begin(s), Error);
  PolicySpec spec = PolicySpec::named("lookahead");
  EXPECT_TRUE(needs_dense(spec));
  spec.schedule = std::make_shared<const ScheduleSource>([](int, int) { return std::vector<int>{}; });
  EXPECT_FALSE(needs_dense(spec));  // a closed loop's schedule replaces it
  EXPECT_FALSE(make_policy(spec)->needs_dense());
}

// n = 40, k = 10, r = 4: p = 6 long-range slots, stride s = ceil(40 / 6) = 7, lattice 6, 13, ..., 34.
// The one spare slot holds the newest token off the lattice outside the window (35).
TEST(PolicyAblations, StridedKeepsTheWindowAndAnEvenLattice) {
  SparsePatternPolicy p(SparsePatternPolicy::Pattern::Strided, false);
  const auto caches = drive(p, 40, 10, 4, [](int, int) { return 1.0; });
  EXPECT_EQ(caches.back(), (std::vector<int>{6, 13, 20, 27, 34, 35, 36, 37, 38, 39}));
  for (int j : {6, 13, 34}) EXPECT_TRUE(p.on_pattern(j));
  EXPECT_FALSE(p.on_pattern(35));
  for (size_t i = 10; i < caches.size(); ++i) {
    ASSERT_EQ(caches[i].size(), 10u);
    for (int t = 0; t < 4; ++t)  // the window is always held
      ASSERT_TRUE(std::binary_search(caches[i].begin(), caches[i].end(), static_cast<int>(i) - t)) << i;
  }
}

// n = 40, k = 10, r = 4: blocks of l = 4, c = clamp(floor(6 * 4 / 40), 1, 4) = 1 summary token per
// block (j mod 4 = 3). At step 39 the current block 36..39 and the 6 newest summaries are held.
TEST(PolicyAblations, FixedKeepsTheCurrentBlockAndTheBlockSummaries) {
  SparsePatternPolicy p(SparsePatternPolicy::Pattern::Fixed, false);
  const auto caches = drive(p, 40, 10, 4, [](int, int) { return 1.0; });
  EXPECT_EQ(caches.back(), (std::vector<int>{15, 19, 23, 27, 31, 35, 36, 37, 38, 39}));
  // At the first token of a block (step 36) the previous block's tokens off the pattern are the first
  // to go, one per step and oldest first (32 here); the oldest summary goes only when none is left.
  EXPECT_EQ(caches[35], (std::vector<int>{11, 15, 19, 23, 27, 31, 32, 33, 34, 35}));
  EXPECT_EQ(caches[36], (std::vector<int>{11, 15, 19, 23, 27, 31, 33, 34, 35, 36}));
  // A larger budget affords more summary tokens per block: n = 40, k = 24, r = 4: c = floor(20 * 4 / 40) = 2.
  SparsePatternPolicy q(SparsePatternPolicy::Pattern::Fixed, false);
  drive(q, 40, 24, 4, [](int, int) { return 1.0; });
  EXPECT_TRUE(q.on_pattern(2) && q.on_pattern(3) && !q.on_pattern(1));
}

// With heavy hitters, half of the long-range slots keep the highest accumulated attention: token 2
// (off both patterns) gets most of every query's attention and survives, while the plain pattern
// evicts it.
TEST(PolicyAblations, HeavyHitterVariantsKeepTheHeaviestToken) {
  const auto heavy_two = [](int, int j) { return j == 2 ? 50.0 : 1.0; };
  for (auto pattern : {SparsePatternPolicy::Pattern::Strided, SparsePatternPolicy::Pattern::Fixed}) {
    SparsePatternPolicy plain(pattern, false), mixed(pattern, true);
    const auto a = drive(plain, 40, 10, 4, heavy_two);
    const auto b = drive(mixed, 40, 10, 4, heavy_two);
    EXPECT_FALSE(std::binary_search(a.back().begin(), a.back().end(), 2)) << plain.name();
    EXPECT_TRUE(std::binary_search(b.back().begin(), b.back().end(), 2)) << mixed.name();
    EXPECT_EQ(b.back().size(), 10u);
  }
  EXPECT_EQ(SparsePatternPolicy(SparsePatternPolicy::Pattern::Fixed, true).name(), "fixed-h2o");
}

// Every pattern policy is nested and holds the budget on real replays, with a prompt and GQA.
TEST(PolicyAblations, PatternsAreNestedUnderReplay) {
  const Trace tr = random_trace(1, 4, 2, 64, 8, 9);
  for (const char* name :
       {"strided", "fixed", "strided-h2o", "fixed-h2o", "lookahead", "heavy", "anti-h2o", "oldest"}) {
    const auto res = replay_policy(tr, name, 16, 6);
    ASSERT_TRUE(res.nested);
    for (const auto& h : res.heads)
      for (size_t i = 16; i < h.steps.size(); ++i) {
        ASSERT_EQ(h.steps[i].kept.size(), 16u) << name;
        ASSERT_TRUE(h.steps[i].reentered.empty()) << name;
      }
  }
}

// heavy: h2o's score with no window, the new token a candidate too; anti-h2o: the largest score
// outside the window leaves; oldest: the first k - 1 tokens and the current one. Transcribed on the
// probabilities the replay recorded.
TEST(PolicyAblations, HeavyAntiH2OAndOldestFollowTheirRules) {
  const int n = 40, k = 10, r = 4;
  const Trace tr = random_trace(1, 1, 1, n, 8, 11, 3.0);
  for (const char* name : {"heavy", "anti-h2o", "oldest"}) {
    ReplayOptions o;
    o.run.policy = PolicySpec::named(name);
    o.run.budget = Budget(Amount::parse(std::to_string(k)), Amount::parse(std::to_string(r), true));
    o.record_probs = true;
    const auto res = replay(tr, o);
    std::vector<double> score(n, 0.0);
    std::vector<int> cache;
    for (int i = 0; i < n; ++i) {
      const auto& s = res.heads[0].steps[static_cast<size_t>(i)];
      for (size_t t = 0; t < s.attended.size(); ++t) score[static_cast<size_t>(s.attended[t])] += s.probs[t];
      cache.push_back(i);
      if (static_cast<int>(cache.size()) > k) {
        size_t v = 0;
        if (std::string(name) == "heavy") {
          for (size_t p = 1; p < cache.size(); ++p)
            if (score[cache[p]] < score[cache[v]]) v = p;
        } else if (std::string(name) == "anti-h2o") {
          for (size_t p = 1; p + r < cache.size(); ++p)
            if (score[cache[p]] > score[cache[v]]) v = p;
        } else {
          v = cache.size() - 2;
        }
        cache.erase(cache.begin() + static_cast<long>(v));
      }
      ASSERT_EQ(s.kept, cache) << name << " step " << i;
    }
  }
  const auto oldest = replay_policy(tr, "oldest", k, r);
  EXPECT_EQ(oldest.heads[0].steps.back().kept, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 39}));
}

namespace {

// The masking code's rule read literally: every step, add the probabilities, take the top h of all
// of [0, L - r) by score (ties: the newer token), zero the scores of the rest of that range.
std::vector<int> mask_rule_cache(std::vector<double>& score, int length, int h, int r) {
  std::vector<int> pool(static_cast<size_t>(length - r));
  std::iota(pool.begin(), pool.end(), 0);
  const size_t take = std::min(pool.size(), static_cast<size_t>(h));
  std::sort(pool.begin(), pool.end(),
            [&](int a, int b) { return score[a] > score[b] || (score[a] == score[b] && a > b); });
  std::vector<int> cache(pool.begin(), pool.begin() + static_cast<long>(take));
  if (r > 0)
    for (size_t t = take; t < pool.size(); ++t) score[pool[t]] = 0.0;
  for (int j = length + 1 - r; j < length; ++j) cache.push_back(j);
  std::sort(cache.begin(), cache.end());
  return cache;
}

}  // namespace

// h2o-mask sorts only last step's heavy set and the token that left the window when that decides the
// top h, and the whole range otherwise: the same caches as the literal rule, step for step, also when
// many probabilities are exactly 0 (ties at 0, where the whole range must be sorted) and with r = 0.
TEST(PolicyAblations, MaskVariantEqualsTheLiteralRuleStepByStep) {
  for (const auto& [h, r, zeros] : std::vector<std::tuple<int, int, double>>{
           {6, 4, 0.0}, {6, 4, 0.7}, {6, 4, 0.97}, {5, 0, 0.5}, {1, 1, 0.9}, {0, 3, 0.5}}) {
    H2OMaskPolicy p;
    PolicySetup setup;
    setup.n = 120;
    setup.budget = {h + r, h, r};
    setup.prompt_len = 3;
    p.begin(setup);
    std::vector<double> score(static_cast<size_t>(setup.n), 0.0);
    std::mt19937_64 rng(static_cast<std::uint64_t>(h * 100 + r));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    bool active = false;
    for (int i = 0; i < setup.n; ++i) {
      const std::vector<int> att = p.attended(i);
      std::vector<double> probs(att.size());
      for (double& x : probs) x = u(rng) < zeros ? 0.0 : u(rng);
      probs.back() += 1e-3;  // never all zero
      for (size_t t = 0; t < att.size(); ++t) score[static_cast<size_t>(att[t])] += probs[t];
      p.observe(i, att, probs);
      const int length = i + 1;
      std::vector<int> want(static_cast<size_t>(length));
      std::iota(want.begin(), want.end(), 0);
      if (!(i < setup.prompt_len - 1 || length <= h + r)) want = mask_rule_cache(score, length, h, r), active = true;
      ASSERT_EQ(p.cache(), want) << "h " << h << " r " << r << " zeros " << zeros << " step " << i;
    }
    EXPECT_TRUE(active);
  }
}
