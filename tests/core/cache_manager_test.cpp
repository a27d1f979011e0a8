// The decoder-facing manager driven like a decoder (per step: hold the kept positions plus the new
// one, compute the query heads' attention over them, average over the GQA group) must keep exactly
// what the replay engine keeps with one cache per KV head (kv-mean); batch > 1 keeps sequences apart.
#include "kvo/core/cache_manager.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/policies.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/synth.hpp"

using namespace kvo;

namespace {

Trace small_trace(std::uint64_t seed) {
  SynthOptions so;
  so.layers = 2;
  so.heads = 4;
  so.kv_heads = 2;
  so.tokens = 90;
  so.head_dim = 16;
  so.seed = seed;
  return synthesize(so);
}

// Drives the manager over sequence `seq` of the trace like a decoder; checks against `want`. A
// decoder holds what it held minus what the manager evicted (returned, or taken later under a
// shared budget).
void drive(const Trace& tr, KvEvictionManager& m, int seq, const ReplayResult* want) {
  const int g = tr.group_size();
  std::vector<std::vector<int>> holds(static_cast<size_t>(tr.n_layers * tr.n_kv_heads));
  const auto drop = [](std::vector<int>& held, const std::vector<int>& gone) {
    for (int j : gone) {
      const auto it = std::find(held.begin(), held.end(), j);
      ASSERT_TRUE(it != held.end()) << "evicted " << j << ", not held";
      held.erase(it);
    }
  };
  for (int i = 0; i < tr.n_tokens; ++i) {
    for (int l = 0; l < tr.n_layers; ++l)
      for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
        std::vector<int>& pos = holds[static_cast<size_t>(l * tr.n_kv_heads + kv)];
        drop(pos, m.take_evicted(seq, l, kv));
        pos.push_back(i);
        std::vector<double> agg(pos.size(), 0.0), lg(pos.size()), p(pos.size());
        for (int h = kv * g; h < (kv + 1) * g; ++h) {
          HeadView(tr, l, h).logits(i, pos, lg);
          softmax(lg, p);
          for (size_t t = 0; t < p.size(); ++t) agg[t] += p[t];
        }
        for (double& x : agg) x /= g;
        drop(pos, m.step(seq, l, kv, i, pos, agg));
      }
    for (int l = 0; l < tr.n_layers; ++l)
      for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
        std::vector<int>& pos = holds[static_cast<size_t>(l * tr.n_kv_heads + kv)];
        drop(pos, m.take_evicted(seq, l, kv));
        ASSERT_EQ(pos, m.held(seq, l, kv));
        if (want) {
          // The replay reports every query head of a KV-head unit; the first of the group stands for it.
          const auto& kept =
              want->heads[static_cast<size_t>(l * tr.n_heads + kv * g)].steps[static_cast<size_t>(i)].kept;
          ASSERT_EQ(pos, kept) << "layer " << l << " kv " << kv << " step " << i;
        }
      }
  }
}

}  // namespace

// The registry's decoder trait is what the manager does: every policy marked drivable builds a
// manager, and every other one (offline, non-nested, reading the dense attention) is refused.
TEST(CacheManager, TheDecoderTraitIsWhatTheManagerAccepts) {
  for (const PolicyEntry& e : policy_table()) {
    CacheManagerOptions o;
    o.run.policy = PolicySpec::named(e.name);
    o.run.budget = Budget(Amount::parse("8"));
    o.n_layers = 1;
    o.n_kv_heads = 1;
    o.max_len = 32;
    if (e.traits.decoder) {
      EXPECT_NO_THROW(KvEvictionManager{o}) << e.name;
    } else {
      EXPECT_THROW(KvEvictionManager{o}, Error) << e.name;
    }
  }
}

TEST(CacheManager, KeepsWhatTheReplayEngineKeeps) {
  const Trace tr = small_trace(1);
  for (const char* policy : {"h2o", "h2o-paper", "tova", "streaming", "scissorhands", "window", "random"}) {
    ReplayOptions ro;
    ro.run.policy = PolicySpec::named(policy);
    ro.run.budget = Budget(Amount::parse("20%"));
    ro.run.gqa = GqaMode::KvMean;
    const ReplayResult want = replay(tr, ro);
    CacheManagerOptions o;
    o.run.policy = PolicySpec::named(policy);
    o.run.budget = ro.run.budget;
    o.n_layers = tr.n_layers;
    o.n_kv_heads = tr.n_kv_heads;
    o.max_len = tr.n_tokens;
    KvEvictionManager m(o);
    SCOPED_TRACE(policy);
    drive(tr, m, 0, &want);
    EXPECT_EQ(m.held(0, 1, 1).size(), static_cast<size_t>(m.budget(1, 1).total));
  }
}

// Under a shared budget the manager keeps what replay keeps with the same scope, whether the
// prompt is held whole first or eviction starts at once.
TEST(CacheManager, SharedBudgetsKeepWhatTheReplayEngineKeeps) {
  const Trace tr = small_trace(4);
  for (PolicyId id : {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands})
    for (BudgetScope scope : {BudgetScope::Layer, BudgetScope::Model})
      for (int prompt : {0, 40}) {
        ReplayOptions ro;
        ro.run.policy.id = id;
        ro.run.budget = Budget::parse("15%", "", {"L1H0=8"});
        ro.run.gqa = GqaMode::KvMean;
        ro.run.budget_scope = scope;
        ro.run.prompt_len = prompt;
        const ReplayResult want = replay(tr, ro);
        CacheManagerOptions o;
        o.run = ro.run;
        o.n_layers = tr.n_layers;
        o.n_kv_heads = tr.n_kv_heads;
        o.max_len = tr.n_tokens;
        o.batch = 2;
        KvEvictionManager m(o);
        SCOPED_TRACE(policy_name(id) + " " + budget_scope_name(scope) + " prompt " + std::to_string(prompt));
        drive(tr, m, 1, &want);
        size_t held = 0;
        for (int l = 0; l < tr.n_layers; ++l)
          for (int kv = 0; kv < tr.n_kv_heads; ++kv) held += m.held(1, l, kv).size();
        EXPECT_EQ(held, static_cast<size_t>(13 * 3 + 8));  // 15% of 90 is 13 tokens
        EXPECT_EQ(m.max_held(0, 0), scope == BudgetScope::Layer ? 26 : 47);
      }
}

// Under an engine's contract the manager keeps what replay keeps with the same contract: kept sets
// tied across a layer's heads or the whole model, budgets shared by sets, pages, a delay,
// compressions every N steps and admission only; no unit ever holds more than max_held.
TEST(CacheManager, ContractsKeepWhatTheReplayEngineKeeps) {
  const Trace tr = small_trace(6);
  std::vector<EvictionContract> contracts(6);
  contracts[0].kept_sets = KeptSets::Model;
  contracts[0].budget = 12;
  contracts[0].sinks = 2;
  contracts[0].recent = 4;
  contracts[1].kept_sets = KeptSets::Layer;
  contracts[1].budget_scope = BudgetScope::Model;
  contracts[1].budget = 10;
  contracts[1].recent = 2;
  contracts[2].budget = 10;
  contracts[2].recent = 4;
  contracts[2].delay = 3;
  contracts[3].kept_sets = KeptSets::Model;
  contracts[3].page_size = 4;
  contracts[3].budget = 16;
  contracts[3].sinks = 4;
  contracts[3].recent = 4;
  contracts[4].kept_sets = KeptSets::KvHead;
  contracts[4].budget = 10;
  contracts[4].interval = 8;
  contracts[5].budget = 12;
  contracts[5].recent = 4;
  contracts[5].admission_only = true;
  for (size_t c = 0; c < contracts.size(); ++c)
    for (PolicyId id : {PolicyId::H2O, PolicyId::Tova}) {
      if (contracts[c].admission_only && id != PolicyId::H2O) continue;  // first come: the policy does not matter
      ReplayOptions ro;
      ro.run.policy.id = id;
      ro.run.gqa = GqaMode::KvMean;
      ro.contract = contracts[c];
      const ReplayResult want = replay(tr, ro);
      CacheManagerOptions o;
      o.run = ro.run;
      o.contract = contracts[c];
      o.n_layers = tr.n_layers;
      o.n_kv_heads = tr.n_kv_heads;
      o.max_len = tr.n_tokens;
      KvEvictionManager m(o);
      SCOPED_TRACE("contract " + std::to_string(c) + " " + policy_name(id));
      drive(tr, m, 0, &want);
      for (int l = 0; l < tr.n_layers; ++l)
        for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
          EXPECT_LE(m.held(0, l, kv).size(), size_t(m.max_held(l, kv)));
          if (contracts[c].kept_sets == KeptSets::Model) {
            EXPECT_EQ(m.held(0, l, kv), m.held(0, 0, 0));
          }
        }
    }
  // A policy with no per-token score cannot obey a contract: refused when the manager is built.
  CacheManagerOptions o;
  o.run.policy.id = PolicyId::Random;
  o.contract = contracts[0];
  o.n_layers = tr.n_layers;
  o.n_kv_heads = tr.n_kv_heads;
  o.max_len = tr.n_tokens;
  EXPECT_THROW(KvEvictionManager{o}, Error);
}

// A steer replaces what the contract evicts: here the oldest token past the sinks always leaves,
// so the whole-model set is the sinks and the newest tokens (StreamingLLM's cache). A steer that
// names a protected token or a wrong count is refused at that step; one without a contract, or
// under pages, when the manager is built.
TEST(CacheManager, ASteerReplacesWhatTheContractEvicts) {
  const Trace tr = small_trace(6);
  EvictionContract c;
  c.kept_sets = KeptSets::Model;
  c.budget = 12;
  c.sinks = 2;
  c.recent = 4;
  CacheManagerOptions o;
  o.run.policy.id = PolicyId::H2O;
  o.contract = c;
  o.n_layers = tr.n_layers;
  o.n_kv_heads = tr.n_kv_heads;
  o.max_len = tr.n_tokens;
  int calls = 0;
  std::vector<int> proposed;
  o.steer = [&](const EvictionChoice& choice, std::vector<int>& tokens) {
    ++calls;
    const int step = choice.step;
    EXPECT_EQ(choice.seq, 0);
    EXPECT_EQ(choice.units.size(), size_t(tr.n_layers * tr.n_kv_heads));
    EXPECT_EQ(choice.score.size(), size_t(tr.n_tokens));
    // The candidates: past the sinks, outside the window of 4, as many as held minus those.
    EXPECT_EQ(choice.candidates.front(), step - c.budget + c.sinks);  // what the steer left
    EXPECT_EQ(choice.candidates.back(), step - c.recent);
    EXPECT_EQ(choice.candidates.size(), size_t(c.budget + 1 - c.sinks - c.recent));
    ASSERT_EQ(tokens.size(), 1u);
    proposed.push_back(tokens[0] - step);  // sinks - budget where h2o chose the oldest too
    tokens = {step - c.budget + c.sinks};  // the oldest past the sinks
  };
  KvEvictionManager m(o);
  drive(tr, m, 0, nullptr);
  EXPECT_EQ(calls, tr.n_tokens - c.budget);
  std::vector<int> want = {0, 1};
  for (int j = tr.n_tokens - (c.budget - c.sinks); j < tr.n_tokens; ++j) want.push_back(j);
  EXPECT_EQ(m.held(0, 1, 1), want);
  // h2o's own choices were not all the oldest: the steer did change something.
  EXPECT_GT(std::count_if(proposed.begin(), proposed.end(), [&](int d) { return d != c.sinks - c.budget; }), 0);

  for (int bad : {0, 1}) {  // a sink; then two tokens for one
    CacheManagerOptions ob = o;
    ob.steer = [bad](const EvictionChoice& choice, std::vector<int>& tokens) {
      tokens = bad == 0 ? std::vector<int>{1} : std::vector<int>{choice.step - 9, choice.step - 8};
    };
    KvEvictionManager mb(ob);
    try {
      drive(tr, mb, 0, nullptr);
      ADD_FAILURE() << "a bad steer was not refused";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("eviction steer at step 12"), std::string::npos) << e.what();
    }
  }
  CacheManagerOptions none = o;
  none.contract.reset();
  EXPECT_THROW(KvEvictionManager{none}, Error);
  CacheManagerOptions pages = o;
  pages.contract->page_size = 4;
  pages.contract->budget = 16;
  pages.contract->sinks = 4;
  EXPECT_THROW(KvEvictionManager{pages}, Error);
}

// A shared budget decides once every unit of its group stepped a position: a unit running ahead,
// or stepping before it dropped what the group evicted from it, is refused in one line.
TEST(CacheManager, SharedBudgetsRefuseUnitsOutOfStep) {
  CacheManagerOptions o;
  o.run.policy.id = PolicyId::H2O;
  o.run.budget = Budget(Amount::parse("2"));
  o.run.budget_scope = BudgetScope::Layer;
  o.n_layers = 1;
  o.n_kv_heads = 2;
  o.max_len = 10;
  KvEvictionManager m(o);
  const std::vector<double> one{1.0};
  EXPECT_TRUE(m.step(0, 0, 0, 0, std::vector<int>{0}, one).empty());
  try {
    m.step(0, 0, 0, 1, std::vector<int>{0, 1}, std::vector<double>{0.5, 0.5});
    FAIL() << "a unit ahead of its group must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in lockstep"), std::string::npos) << e.what();
  }
  KvEvictionManager fresh(o);
  for (int i = 0; i < 4; ++i) {
    for (int kv = 0; kv < 2; ++kv) {
      std::vector<int> pos = fresh.held(0, 0, kv);
      pos.push_back(i);
      std::vector<double> p(pos.size(), 1.0 / static_cast<double>(pos.size()));
      if (i == 3 && kv == 0) {  // step 2 evicted from unit 0 when unit 1 stepped: not yet taken
        EXPECT_THROW(fresh.step(0, 0, 0, i, pos, p), Error);
        EXPECT_FALSE(fresh.take_evicted(0, 0, 0).empty());
        pos = fresh.held(0, 0, 0);
        pos.push_back(i);
        p.assign(pos.size(), 1.0 / static_cast<double>(pos.size()));
      }
      fresh.step(0, 0, kv, i, pos, p);
    }
  }
  o.run.policy.id = PolicyId::Streaming;
  EXPECT_THROW(KvEvictionManager{o}, Error);
}

TEST(CacheManager, SequencesOfABatchAreIndependent) {
  const Trace a = small_trace(2), b = small_trace(3);
  CacheManagerOptions o;
  o.run.policy = PolicySpec::named("h2o");
  o.run.budget = Budget(Amount::parse("16"));
  o.n_layers = 2;
  o.n_kv_heads = 2;
  o.batch = 2;
  o.max_len = 90;
  KvEvictionManager both(o);
  drive(a, both, 0, nullptr);
  drive(b, both, 1, nullptr);
  o.batch = 1;
  KvEvictionManager only_b(o);
  drive(b, only_b, 0, nullptr);
  EXPECT_EQ(both.held(1, 1, 0), only_b.held(0, 1, 0));
  EXPECT_NE(both.held(0, 1, 0), both.held(1, 1, 0));
}

TEST(CacheManager, RejectsWhatADecoderCannotDrive) {
  CacheManagerOptions o;
  o.n_layers = o.n_kv_heads = 1;
  o.max_len = 10;
  o.run.budget = Budget(Amount::parse("4"));
  o.run.policy = PolicySpec::named("h2o-mask");
  EXPECT_THROW(KvEvictionManager{o}, Error);
  o.run.policy = PolicySpec::named("greedy");
  o.run.policy.objective.name = "dense-acc";
  EXPECT_THROW(KvEvictionManager{o}, Error);
  o.run.policy = PolicySpec{};
  KvEvictionManager m(o);
  const std::vector<int> pos = {1};
  const std::vector<double> p = {1.0};
  EXPECT_THROW(m.step(0, 0, 0, 1, pos, p), Error);  // step 0 must come first
}

TEST(CacheManager, ScheduledPolicyFollowsItsEndTimes) {
  ScheduledPolicy p("oracle", {2, 0, 3, 3});  // token 1 kept only at step 1... end 0 < 1: never kept
  p.begin({});
  const std::vector<double> none;
  p.observe(0, {}, none);
  EXPECT_EQ(p.cache(), (std::vector<int>{0}));
  p.observe(1, {}, none);
  EXPECT_EQ(p.cache(), (std::vector<int>{0}));
  p.observe(2, {}, none);
  EXPECT_EQ(p.cache(), (std::vector<int>{0, 2}));
  p.observe(3, {}, none);
  EXPECT_EQ(p.cache(), (std::vector<int>{2, 3}));
}

TEST(CacheManager, TheDecoderDocSnippetRuns) {
  std::vector<int> positions = {0};
  std::vector<double> p = {1.0};
  const int s = 3, l = 29, h = 2, pos = 0;
  // --8<-- [start:manager]
  kvo::CacheManagerOptions o;
  o.run.policy = kvo::PolicySpec::named("h2o");  // a policy whose trait `decoder` is set
  o.run.budget = kvo::Budget::parse("20%");      // tokens or a ratio of max_len
  o.run.budget.add_override("L3=0.1");           // per layer / per (layer, head): "L3H1=32"
  o.n_layers = 30;
  o.n_kv_heads = 3;  // caches are per KV head (GQA-aware)
  o.batch = 4;       // independent sequences
  o.max_len = 1024;  // what ratio budgets refer to
  kvo::KvEvictionManager manager(o);

  // In the decoder, for sequence s, layer l, KV head h, after the new token at position pos
  // attended the positions it holds (ascending, pos last) with probabilities p (mean over the
  // query heads of the group):
  std::vector<int> gone = manager.step(s, l, h, pos, positions, p);  // free these rows now
  // --8<-- [end:manager]
  EXPECT_TRUE(gone.empty());
  EXPECT_EQ(manager.budget(3, 0).total, 102);
  EXPECT_EQ(manager.budget(4, 0).total, 204);
}

// docs/decoder.md's shared-budget loop, driven over 200 steps of one layer with random attention:
// the layer holds its three heads' sum, and the heads' counts move apart.
TEST(CacheManager, TheSharedBudgetDocSnippetRuns) {
  std::mt19937_64 rng(5);
  std::vector<std::vector<int>> held(3);  // the decoder's rows of layer l, by KV head
  const auto drop = [&](int h, int position) { std::erase(held[static_cast<size_t>(h)], position); };
  const int s = 0, l = 7;
  // --8<-- [start:shared]
  kvo::CacheManagerOptions o;
  o.run.policy.id = kvo::PolicyId::H2O;          // a policy with a per-token score (tova, scissorhands)
  o.run.budget = kvo::Budget::parse("64");       // each KV head's share
  o.run.budget_scope = kvo::BudgetScope::Layer;  // a layer's KV heads share 3 x 64 rows (Model: all)
  o.n_layers = 30;
  o.n_kv_heads = 3;
  o.max_len = 1024;
  kvo::KvEvictionManager manager(o);
  const int rows = manager.max_held(l, 0) + 1;  // a head may hold the layer's whole budget
  // --8<-- [end:shared]
  EXPECT_EQ(rows, 193);
  const auto attention = [&](int h) {  // random attention over the rows held
    std::vector<double> p(held[static_cast<size_t>(h)].size());
    for (double& x : p) x = std::exponential_distribution<double>(1.0)(rng);
    const double sum = std::accumulate(p.begin(), p.end(), 0.0);
    for (double& x : p) x /= sum;
    return p;
  };
  for (int pos = 0; pos < 200; ++pos) {
    for (int h = 0; h < 3; ++h) {
      // --8<-- [start:shared-step]
      // Per position, every KV head of the layer in turn: drop what the group evicted from this
      // head while the others stepped, then step it (the last head's step decides for all).
      for (int gone : manager.take_evicted(s, l, h)) drop(h, gone);
      held[h].push_back(pos);                      // the new token's row
      const std::vector<double> p = attention(h);  // the group's mean attention over held[h]
      for (int gone : manager.step(s, l, h, pos, held[h], p)) drop(h, gone);
      // --8<-- [end:shared-step]
    }
  }
  for (int h = 0; h < 3; ++h)
    for (int gone : manager.take_evicted(s, l, h)) drop(h, gone);
  EXPECT_EQ(held[0].size() + held[1].size() + held[2].size(), 192u);
  EXPECT_NE(held[0].size(), 64u);
  for (int h = 0; h < 3; ++h) EXPECT_EQ(held[static_cast<size_t>(h)], manager.held(s, l, h));
}

// docs/decoder.md, "An engine's contract": llama.cpp's whole-model position removal as a manager.
TEST(CacheManager, TheContractDocSnippetRuns) {
  // --8<-- [start:contract]
  kvo::CacheManagerOptions o;
  o.run.policy.id = kvo::PolicyId::H2O;  // evicts by its per-token score, summed over the set's units
  o.contract = kvo::EvictionContract{};
  o.contract->kept_sets = kvo::KeptSets::Model;  // one set for every layer and KV head
  o.contract->budget = 1638;                     // positions the model's cache holds
  o.contract->sinks = 4;
  o.contract->recent = 16;
  o.n_layers = 30;
  o.n_kv_heads = 3;
  o.max_len = 8192;
  kvo::KvEvictionManager manager(o);  // step every unit of a position before the next position
  // --8<-- [end:contract]
  EXPECT_EQ(manager.max_held(29, 2), 1638);
  EXPECT_EQ(manager.budget_scope(), kvo::BudgetScope::Model);
}
