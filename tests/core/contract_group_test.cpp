// Policies obeying a contract (core/contract_group.hpp) in replay: per-head sets evicting at every
// step are the policy alone, record for record, and a shared budget is the shared-budget replay's;
// under every other contract each record keeps what the contract promises: one set for its units,
// never more than k, sinks and window held, whole pages, evictions only after compression steps,
// a delay of d steps, admitted tokens never leaving. What cannot obey one is refused in one line.
#include "kvo/core/contract_group.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "kvo/core/error.hpp"
#include "kvo/core/replay.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

namespace {

const PolicyId kScorePolicies[] = {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands};

ReplayResult run(const Trace& tr, PolicyId id, const EvictionContract& c) {
  ReplayOptions o;
  o.run.policy.id = id;
  o.run.gqa = GqaMode::KvMean;
  o.contract = c;
  return replay(tr, o);
}

ReplayResult plain(const Trace& tr, PolicyId id, int k, int r, BudgetScope scope) {
  ReplayOptions o;
  o.run.policy.id = id;
  o.run.gqa = GqaMode::KvMean;
  o.run.budget = Budget::parse(std::to_string(k), std::to_string(r), {});
  o.run.budget_scope = scope;
  o.run.prompt_len = 0;
  return replay(tr, o);
}

// One record per (layer, KV head): the first query head of each KV group.
std::map<std::pair<int, int>, const HeadReplay*> units(const Trace& tr, const ReplayResult& res) {  // res outlives it
  std::map<std::pair<int, int>, const HeadReplay*> out;
  for (const HeadReplay& h : res.heads) out.emplace(std::pair{h.layer, h.head / tr.group_size()}, &h);
  return out;
}

// The last step each token is held (j - 1: never), from one unit's records; checks nesting.
std::vector<int> ends(const HeadReplay& h) {
  const int n = static_cast<int>(h.steps.size());
  std::vector<int> end(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) end[static_cast<size_t>(j)] = j - 1;
  for (int i = 0; i < n; ++i)
    for (int j : h.steps[static_cast<size_t>(i)].kept) {
      EXPECT_EQ(end[static_cast<size_t>(j)], i - 1) << "token " << j << " comes back at step " << i;
      end[static_cast<size_t>(j)] = i;
    }
  return end;
}

}  // namespace

TEST(ContractGroup, PerHeadSetsAtEveryStepAreThePolicyAlone) {
  const Trace tr = random_trace(2, 4, 2, 40, 8, 3, 1.5);
  for (PolicyId id : kScorePolicies) {
    EvictionContract c;
    c.budget = 9;
    c.recent = id == PolicyId::Tova ? 0 : 3;  // TOVA keeps no window of its own
    const ReplayResult a = run(tr, id, c), b = plain(tr, id, 9, c.recent, BudgetScope::Head);
    ASSERT_EQ(a.heads.size(), b.heads.size());
    for (size_t h = 0; h < a.heads.size(); ++h)
      for (size_t i = 0; i < a.heads[h].steps.size(); ++i)
        ASSERT_EQ(a.heads[h].steps[i].kept, b.heads[h].steps[i].kept)
            << policy_name(id) << " head " << h << " step " << i;
    c.budget_scope = BudgetScope::Layer;  // per-head sets sharing each layer's budget
    const ReplayResult s = run(tr, id, c), t = plain(tr, id, 9, c.recent, BudgetScope::Layer);
    for (size_t h = 0; h < s.heads.size(); ++h)
      for (size_t i = 0; i < s.heads[h].steps.size(); ++i)
        ASSERT_EQ(s.heads[h].steps[i].kept, t.heads[h].steps[i].kept)
            << policy_name(id) << " shared, head " << h << " step " << i;
  }
}

TEST(ContractGroup, TiedSetsHoldOneSetWithinTheBudgetWithSinksAndWindow) {
  const Trace tr = random_trace(3, 4, 2, 50, 8, 5, 1.5);
  for (PolicyId id : kScorePolicies)
    for (KeptSets tie : {KeptSets::Layer, KeptSets::Model}) {
      EvictionContract c;
      c.kept_sets = tie;
      c.budget = 12;
      c.recent = 4;
      c.sinks = 2;
      const ReplayResult res = run(tr, id, c);
      const auto u = units(tr, res);
      for (const auto& [key, h] : u) {
        const HeadReplay& first = *u.at({tie == KeptSets::Model ? 0 : key.first, 0});
        for (size_t i = 0; i < h->steps.size(); ++i) {
          const std::vector<int>& kept = h->steps[i].kept;
          ASSERT_EQ(kept, first.steps[i].kept) << "layer " << key.first << " kv head " << key.second << " step " << i;
          ASSERT_LE(kept.size(), 12u);
          const int step = static_cast<int>(i);
          for (int j = 0; j <= step; ++j)
            if (j < 2 || j > step - 4) {
              ASSERT_TRUE(std::binary_search(kept.begin(), kept.end(), j)) << j;
            }
        }
        ends(*h);
      }
    }
}

TEST(ContractGroup, PagesLeaveWhole) {
  const Trace tr = random_trace(2, 2, 2, 70, 8, 9, 1.5);
  EvictionContract c;
  c.kept_sets = KeptSets::Layer;
  c.budget = 20;
  c.recent = 3;
  c.sinks = 4;
  c.page_size = 4;
  const ReplayResult res = run(tr, PolicyId::H2O, c);
  for (const auto& [key, h] : units(tr, res)) {
    const std::vector<int> end = ends(*h);
    for (int j = 4; j + 1 < 70; ++j)
      if ((j - 4) % 4 != 3) {
        EXPECT_EQ(end[static_cast<size_t>(j)], end[static_cast<size_t>(j + 1)]) << j;
      }
    for (const StepRecord& s : h->steps) EXPECT_LE(s.kept.size(), 20u);
    EXPECT_LT(*std::min_element(end.begin(), end.end()), 69);  // something was evicted
  }
}

TEST(ContractGroup, CompressionsEvictOnlyAfterTheirSteps) {
  const Trace tr = random_trace(1, 2, 1, 60, 8, 11, 1.5);
  EvictionContract c;
  c.budget = 10;
  c.recent = 2;
  c.prompt_len = 20;
  c.chunk = 8;
  c.interval = 5;
  const std::vector<int> points = c.compression_steps(60);
  for (PolicyId id : kScorePolicies) {
    const ReplayResult res = run(tr, id, c);
    for (const auto& [key, h] : units(tr, res)) {
      const std::vector<int> end = ends(*h);
      for (int j = 0; j < 60; ++j) {
        const int e = end[static_cast<size_t>(j)];
        if (e == 59) continue;
        EXPECT_TRUE(std::binary_search(points.begin(), points.end(), e + 1)) << "token " << j << " left after " << e;
        EXPECT_GE(e + 1, j + 2) << "token " << j << " left inside the window";
      }
      for (int p : points) EXPECT_LE(h->steps[static_cast<size_t>(p)].kept.size(), 10u) << "after step " << p;
    }
  }
}

TEST(ContractGroup, ADelayedEvictionTakesEffectDStepsLater) {
  const Trace tr = random_trace(2, 2, 2, 60, 8, 13, 1.5);
  for (int d : {1, 3, 6})
    for (int r : {0, 2, 5}) {
      EvictionContract c;
      c.kept_sets = KeptSets::Model;
      c.budget = 10;
      c.recent = r;
      c.delay = d;
      const ReplayResult res = run(tr, PolicyId::H2O, c);
      for (const auto& [key, h] : units(tr, res)) {
        const std::vector<int> end = ends(*h);
        for (int j = 0; j < 60; ++j) EXPECT_GE(end[static_cast<size_t>(j)], std::min(59, j + std::max(r, d) - 1)) << j;
        for (const StepRecord& s : h->steps) EXPECT_LE(s.kept.size(), 10u) << "d=" << d << " r=" << r;
        EXPECT_LT(*std::min_element(end.begin(), end.end()), 59);
      }
    }
}

TEST(ContractGroup, AdmissionOnlyAdmitsFirstComeAndNeverEvictsAnAdmittedToken) {
  const Trace tr = random_trace(1, 2, 2, 40, 8, 17, 1.5);
  for (int b : {1, 4}) {
    EvictionContract c;
    c.kept_sets = KeptSets::Layer;
    c.budget = 16;
    c.recent = 4;
    c.page_size = b;
    c.admission_only = true;
    const ReplayResult res = run(tr, PolicyId::Tova, c);
    for (const auto& [key, h] : units(tr, res)) {
      const std::vector<int> end = ends(*h);
      // With pages of 4, the window of 4 spans 2 pages and 16 tokens hold 4: 2 pages admitted.
      const int admitted = b == 1 ? 12 : 8;
      for (int j = 0; j < 40; ++j) {
        const int e = end[static_cast<size_t>(j)];
        if (j < admitted) {
          EXPECT_EQ(e, 39) << "token " << j << " came first and is not kept";
        }
        if (j >= admitted && j < 40 - 8) {
          EXPECT_LT(e, 39) << "token " << j << " admitted past the capacity";
        }
      }
    }
  }
}

TEST(ContractGroup, RefusesWhatCannotObeyAContract) {
  const Trace tr = random_trace(1, 2, 1, 20, 8, 1);
  EvictionContract c;
  c.budget = 8;
  ReplayOptions o;
  o.run.policy.id = PolicyId::H2O;
  o.contract = c;
  EXPECT_THROW(replay(tr, o), Error);  // query-head units
  o.run.gqa = GqaMode::KvMean;
  o.run.policy.id = PolicyId::Window;
  EXPECT_THROW(replay(tr, o), Error);  // no per-token score
  o.run.policy.id = PolicyId::H2O;
  o.contract->budget = 30;
  EXPECT_THROW(replay(tr, o), Error);
}
