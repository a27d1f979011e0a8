// kvpress's presses in kvoracle (core/press.hpp): the count rule, torch's RNG, hand-computed
// scores and kept sets, the tie rule and the refusals. The real-model comparison with kvpress
// itself is tests/python/test_kvpress.py.
#include "kvo/core/press.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kvo/core/error.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/synth.hpp"

using namespace kvo;

namespace {

// One layer, one head, dense attention given row by row (row i over keys 0..i).
Trace dense_trace(const std::vector<std::vector<double>>& rows) {
  Trace tr;
  const int n = static_cast<int>(rows.size());
  tr.n_heads = tr.n_kv_heads = 1;
  tr.n_tokens = n;
  tr.resize_layers(1);
  tr.attn[0].assign(static_cast<size_t>(n) * n, 0.f);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) tr.attn[0][static_cast<size_t>(i) * n + j] = static_cast<float>(rows[i][j]);
  return tr;
}

// A one-layer synthetic trace of n tokens (q, k and v), no prompt metadata.
Trace synth_layer(int n) {
  SynthOptions so;
  so.layers = 1;
  so.tokens = n;
  so.prompt_len = 0;
  return synthesize(so);
}

PressOptions press(PressId id, double ratio) {
  PressOptions o;
  o.id = id;
  o.compression_ratio = ratio;
  return o;
}

}  // namespace

TEST(Press, CountRuleIsKvpressComputeNKept) {
  EXPECT_EQ(press_n_kept(512, 0.8), 102);  // int(512 * 0.2) = int(102.4)
  EXPECT_EQ(press_n_kept(512, 0.5), 256);
  EXPECT_EQ(press_n_kept(10, 0.99), 1);  // never empties the cache
  EXPECT_EQ(press_n_kept(7, 0.5), 3);
  EXPECT_EQ(press_n_kept(100, 1.0), 0);
}

TEST(Press, RandomDrawsWhatTorchRandDrawsAfterManualSeed) {
  // torch.Generator().manual_seed(42); torch.rand(6, generator=g) on the CPU (torch 2.15).
  const std::vector<float> want = {0.8822692632675171f, 0.9150039553642273f, 0.38286375999450684f,
                                   0.9593056440353394f, 0.3904482126235962f, 0.600895345211029f};
  EXPECT_EQ(torch_cpu_rand(42, 6), want);
}

TEST(Press, NamesAreKvpressRegistryKeysOrClasses) {
  EXPECT_EQ(parse_press("snapkv"), PressId::SnapKV);
  EXPECT_EQ(parse_press("ObservedAttentionPress"), PressId::ObservedAttention);
  EXPECT_EQ(parse_press_list("all").size(), kPressCount);
  EXPECT_EQ(parse_press_list("tova,knorm"), (std::vector<PressId>{PressId::Tova, PressId::Knorm}));
  const std::string policy = policy_name(PolicyId::H2O);  // a policy is not a press
  try {
    parse_press(policy);
    FAIL() << "an unknown press must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown press '" + policy + "' (known: observed_attention,"),
              std::string::npos);
  }
  EXPECT_THROW(parse_press_list("tova,tova"), Error);
  EXPECT_THROW(parse_press_list("tova,"), Error);
}

TEST(Press, StreamingKeepsSinksAndTheMostRecent) {
  const Trace tr = synth_layer(20);
  PressOptions o = press(PressId::StreamingLLM, 0.5);
  o.n_sink = 2;
  const PressResult r = run_press(press_layer_of(tr, 0, 10), o);  // prompt of 10: keep 5
  ASSERT_EQ(r.n_kept, 5);
  for (const auto& kept : r.kept) EXPECT_EQ(kept, (std::vector<int>{0, 1, 7, 8, 9}));
}

TEST(Press, ObservedAttentionIsColumnMassOverQueriesThatSawTheKey) {
  const Trace tr = dense_trace({{1}, {0.5, 0.5}, {0.2, 0.2, 0.6}, {0.1, 0.6, 0.1, 0.2}});
  const PressResult r = run_press(press_layer_of(tr, 0, 4), press(PressId::ObservedAttention, 0.5));
  const std::vector<double> want = {(1 + 0.5 + 0.2 + 0.1) / 4, (0.5 + 0.2 + 0.6) / 3, (0.6 + 0.1) / 2, 0.2};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(r.scores[0][j], want[j], 1e-7) << j;  // float storage
  EXPECT_EQ(r.kept[0], (std::vector<int>{0, 1}));
}

TEST(Press, TovaScoresTheLastQueryAndForcesTheLastToken) {
  const Trace tr = dense_trace({{1}, {0.5, 0.5}, {0.2, 0.2, 0.6}, {0.1, 0.6, 0.1, 0.2}});
  const PressResult r = run_press(press_layer_of(tr, 0, 4), press(PressId::Tova, 0.5));
  EXPECT_NEAR(r.scores[0][1], 0.6, 1e-7);
  EXPECT_NEAR(r.scores[0][3], r.scores[0][1] + 1, 1e-7);  // max + 1: forced
  EXPECT_EQ(r.kept[0], (std::vector<int>{1, 3}));
}

TEST(Press, SnapKVPoolsWithZeroPaddingAndForcesTheWindow) {
  // Window 1: the scores are the last row's first P-1 entries, pooled over 3 with zeros outside.
  const Trace tr = dense_trace({{1}, {0.5, 0.5}, {0.2, 0.2, 0.6}, {0.3, 0.1, 0.2, 0.4}, {0.1, 0.4, 0.1, 0.2, 0.2}});
  PressOptions o = press(PressId::SnapKV, 0.6);
  o.window_size = 1;
  o.kernel_size = 3;
  const PressResult r = run_press(press_layer_of(tr, 0, 5), o);
  const std::vector<double> s = {0.5 / 3, 0.6 / 3, 0.7 / 3, 0.3 / 3};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(r.scores[0][j], s[j], 1e-7) << j;
  EXPECT_EQ(r.kept[0], (std::vector<int>{2, 4}));  // n_kept = int(5 * 0.4) = 2: the best and the window
}

TEST(Press, TiesKeepTheEarlierPosition) {
  const Trace tr = dense_trace({{1}, {0.5, 0.5}, {0.2, 0.2, 0.6}, {0.25, 0.25, 0.25, 0.25}});
  const PressResult r = run_press(press_layer_of(tr, 0, 4), press(PressId::Tova, 0.5));
  EXPECT_EQ(r.scores[0][0], r.scores[0][2]);
  EXPECT_EQ(r.kept[0], (std::vector<int>{0, 3}));  // 0, 1 and 2 tie; kvpress leaves the choice to torch.topk
}

TEST(Press, KnormKeepsTheSmallestKeysAndEveryKvHeadChoosesAlone) {
  const Trace tr = synth_layer(40);
  const PressResult r = run_press(press_layer_of(tr, 0, 32), press(PressId::Knorm, 0.75));
  ASSERT_EQ(r.kept.size(), static_cast<size_t>(tr.n_kv_heads));
  for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
    double kept_max = 0, dropped_min = INFINITY;
    for (int j = 0; j < 32; ++j) {
      const bool kept = std::binary_search(r.kept[kv].begin(), r.kept[kv].end(), j);
      const double norm = -r.scores[kv][j];
      (kept ? kept_max : dropped_min) = kept ? std::max(kept_max, norm) : std::min(dropped_min, norm);
    }
    EXPECT_LE(kept_max, dropped_min);
  }
}

TEST(Press, ScoresReadOnlyTheQueriesTheTableSays) {
  // Every press's scores are the same when the queries before its last press_queries_read are
  // replaced by others, and (for a press that reads any) differ when the ones it reads are.
  const Trace tr = synth_layer(48);
  const int P = 40;
  for (const PressEntry& e : press_table()) {
    PressOptions o = press(e.id, 0.5);
    o.window_size = 6;
    o.n_sink = 2;
    o.lag_size = 8;
    o.local_window_size = 4;
    o.chunk_size = 16;
    const int read = press_queries_read(o, P);
    EXPECT_EQ(read, e.queries == PressQueries::All      ? P
                    : e.queries == PressQueries::Window ? 6
                    : e.queries == PressQueries::Last   ? 1
                                                        : 0)
        << e.name;
    const auto scores_with = [&](int from, int to, float value) {
      Trace t = tr;
      for (size_t h = 0; h < static_cast<size_t>(t.n_heads); ++h)
        for (int i = from; i < to; ++i)
          for (int c = 0; c < t.head_dim; ++c)
            t.q[0][(h * static_cast<size_t>(t.n_tokens) + i) * t.head_dim + c] = value * static_cast<float>(c % 3);
      return run_press(press_layer_of(t, 0, P), o).scores;
    };
    const auto base = run_press(press_layer_of(tr, 0, P), o).scores;
    EXPECT_EQ(scores_with(0, P - read, 0.7f), base) << e.name << ": reads more queries than the table says";
    if (read > 0 && e.id != PressId::Random) {
      EXPECT_NE(scores_with(P - read, P, 0.7f), base) << e.name << ": does not read the queries the table says";
    }
  }
}

TEST(Press, RefusesWhatKvpressRefusesInOneLine) {
  Trace tr = synth_layer(40);
  EXPECT_THROW(run_press(press_layer_of(tr, 0, 32), press(PressId::SnapKV, 0.5)), Error);  // P <= window_size
  EXPECT_THROW(run_press(press_layer_of(tr, 0, 32), press(PressId::Knorm, 1.0)), Error);   // ratio outside [0, 1)
  EXPECT_THROW(run_press(press_layer_of(tr, 0, 41), press(PressId::Knorm, 0.5)), Error);   // prompt beyond the trace
  tr.v[0].clear();
  try {
    run_press(press_layer_of(tr, 0, 32), press(PressId::LagKV, 0.5));
    FAIL() << "lagkv without values must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("press lagkv: needs values"), std::string::npos);
  }
}

TEST(Press, PyramidBudgetFallsFromTheFirstLayerToTheLast) {
  SynthOptions so;
  so.layers = 1;
  so.tokens = 600;
  so.head_dim = 16;
  so.prompt_len = 0;
  Trace tr = synthesize(so);
  tr.metadata["model_layers"] = "0";
  tr.metadata["model_n_layers"] = "30";
  PressOptions o = press(PressId::PyramidKV, 0.5);
  // P = 512: capacity 64 + 256 = 320, min 12.8 -> max_num clipped to 448, min 64 ... round(448 - L * 384 / 29).
  PressLayer at = press_layer_of(tr, 0, 512);
  EXPECT_EQ(run_press(at, o).n_kept, 448);
  at.model_layer = 29;
  EXPECT_EQ(run_press(at, o).n_kept, 64);
  at.model_layer = 15;
  EXPECT_EQ(run_press(at, o).n_kept, static_cast<int>(std::nearbyint(448 - 15 * 384.0 / 29)));
}
