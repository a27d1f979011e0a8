// The decoder-facing manager driven like a decoder (per step: hold the kept positions plus the new
// one, compute the query heads' attention over them, average over the GQA group) must keep exactly
// what the replay engine keeps with one cache per KV head (kv-mean); batch > 1 keeps sequences apart.
#include "kvo/core/cache_manager.hpp"

#include <gtest/gtest.h>

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

// Drives the manager over sequence `seq` of the trace like a decoder; checks against `want`.
void drive(const Trace& tr, KvEvictionManager& m, int seq, const ReplayResult* want) {
  const int g = tr.group_size();
  for (int i = 0; i < tr.n_tokens; ++i)
    for (int l = 0; l < tr.n_layers; ++l)
      for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
        std::vector<int> pos = m.held(seq, l, kv);
        pos.push_back(i);
        std::vector<double> agg(pos.size(), 0.0), lg(pos.size()), p(pos.size());
        for (int h = kv * g; h < (kv + 1) * g; ++h) {
          HeadView(tr, l, h).logits(i, pos, lg);
          softmax(lg, p);
          for (size_t t = 0; t < p.size(); ++t) agg[t] += p[t];
        }
        for (double& x : agg) x /= g;
        const auto gone = m.step(seq, l, kv, i, pos, agg);
        for (int j : gone) EXPECT_TRUE(std::find(pos.begin(), pos.end(), j) != pos.end());
        if (want) {
          // The replay reports every query head of a KV-head unit; the first of the group stands for it.
          const auto& kept =
              want->heads[static_cast<size_t>(l * tr.n_heads + kv * g)].steps[static_cast<size_t>(i)].kept;
          ASSERT_EQ(m.held(seq, l, kv), kept) << "layer " << l << " kv " << kv << " step " << i;
        }
      }
}

}  // namespace

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
