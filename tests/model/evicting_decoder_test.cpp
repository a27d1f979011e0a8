// Decoding with real eviction, on the tiny test model: with the full cache it equals the batched
// forward pass; with a budget, the pools hold exactly the manager's positions, memory stays at
// budget rows, and the teacher-forced loss stays finite.
#include "kvo/model/evicting_decoder.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kvo/core/error.hpp"
#include "kvo/core/eviction_contract.hpp"
#include "kvo/core/policy_registry.hpp"
#include "model_fixture.hpp"

using namespace kvo;

namespace {

CacheManagerOptions options(const model::Llama& m, PolicyId policy, const std::string& budget, int n) {
  CacheManagerOptions o;
  o.run.policy.id = policy;
  o.run.budget = Budget(Amount::parse(budget));
  o.n_layers = m.config().n_layers;
  o.n_kv_heads = m.config().n_kv_heads;
  o.max_len = n;
  return o;
}

}  // namespace

TEST(EvictingDecoder, FullCacheEqualsTheBatchedForwardPass) {
  const auto& m = test::tiny_model();
  const int n = 20;
  const auto ids = test::gpl3_tokens(n);
  auto cache = m.new_cache(n);
  const model::MatrixRM batch = m.forward(ids, cache);
  KvEvictionManager mgr(options(m, PolicyId::Full, "100%", n));
  model::EvictingDecoder dec(m, mgr, n + 1);
  for (int t = 0; t < n; ++t) {
    const Eigen::RowVectorXf one = dec.step(ids[static_cast<size_t>(t)]);
    const float scale = batch.row(t).cwiseAbs().maxCoeff();
    EXPECT_LT((one - batch.row(t)).cwiseAbs().maxCoeff(), 1e-4f * scale) << t;
  }
  EXPECT_EQ(dec.bytes_held(), static_cast<size_t>(n) * m.config().n_layers * m.config().n_kv_heads *
                                  m.config().head_dim * 2 * sizeof(float));
}

TEST(EvictingDecoder, EvictedRowsLeaveAndMemoryStaysAtTheBudget) {
  const auto& m = test::tiny_model();
  const int n = 40, k = 8;
  const auto ids = test::gpl3_tokens(n);
  KvEvictionManager mgr(options(m, PolicyId::H2O, std::to_string(k), n));
  model::EvictingDecoder dec(m, mgr, k + 1);
  double nll = 0.0;
  for (int t = 0; t < n; ++t) {
    const Eigen::RowVectorXf logits = dec.step(ids[static_cast<size_t>(t)]);
    ASSERT_TRUE(logits.allFinite());
    if (t + 1 < n) {
      const float mx = logits.maxCoeff();
      nll += mx + std::log((logits.array() - mx).exp().sum()) - logits(ids[static_cast<size_t>(t) + 1]);
    }
  }
  const size_t row = static_cast<size_t>(m.config().head_dim) * 2 * sizeof(float);
  const size_t units = static_cast<size_t>(m.config().n_layers) * m.config().n_kv_heads;
  EXPECT_EQ(dec.bytes_held(), units * k * row);
  EXPECT_EQ(dec.peak_bytes_held(), units * k * row);
  EXPECT_EQ(dec.bytes_allocated(), units * (k + 1) * row);
  for (int l = 0; l < m.config().n_layers; ++l)
    for (int h = 0; h < m.config().n_kv_heads; ++h) EXPECT_EQ(mgr.held(0, l, h).size(), static_cast<size_t>(k));
  EXPECT_TRUE(std::isfinite(nll));  // (how good the answers stay is the real model's question: docs/decoder.md)
}

TEST(EvictingDecoder, PoolsMustFitTheBudget) {
  const auto& m = test::tiny_model();
  KvEvictionManager mgr(options(m, PolicyId::H2O, "16", 64));
  EXPECT_THROW(model::EvictingDecoder(m, mgr, 16), kvo::Error);
}

// The layered prefill is the token-by-token decoder's computation in another order: for every
// nested policy the logits agree within 1e-4 and every (layer, KV head) keeps the same positions,
// and decoding continues from the state it leaves.
TEST(EvictingDecoder, LayeredPrefillEqualsTokenByTokenDecoding) {
  const auto& m = test::tiny_model();
  const int n = 72, k = 16;
  const auto ids = test::gpl3_tokens(n + 4);
  const std::span<const int> input(ids.data(), static_cast<size_t>(n));
  for (const PolicyId id : {PolicyId::H2O, PolicyId::Tova, PolicyId::Window, PolicyId::Streaming,
                            PolicyId::Scissorhands, PolicyId::Random, PolicyId::Full}) {
    SCOPED_TRACE(policy_name(id));
    const std::string budget = id == PolicyId::Full ? "100%" : std::to_string(k);
    KvEvictionManager by_token_mgr(options(m, id, budget, n + 4));
    KvEvictionManager layered_mgr(options(m, id, budget, n + 4));
    const int slots = id == PolicyId::Full ? n + 5 : k + 1;
    model::EvictingDecoder by_token(m, by_token_mgr, slots), layered(m, layered_mgr, slots);
    model::MatrixRM stepped(n, m.config().vocab);
    for (int t = 0; t < n; ++t) stepped.row(t) = by_token.step(ids[static_cast<size_t>(t)]);
    const model::MatrixRM batch = layered.prefill(input, /*all_logits=*/true);
    ASSERT_EQ(batch.rows(), n);
    // Batched and single-row float32 products round differently: a portable build agrees within
    // 1e-4 of the largest logit; with fused multiply-adds (-march=native, the sanitizer pass) one
    // position of `window` differed by 1.6e-4 of it while every kept set stayed identical. The
    // bound allows that rounding; the kept sets below are compared exactly.
    for (int t = 0; t < n; ++t) {
      const float scale = std::max(1.0f, stepped.row(t).cwiseAbs().maxCoeff());
      EXPECT_LT((batch.row(t) - stepped.row(t)).cwiseAbs().maxCoeff(), 1e-3f * scale) << "position " << t;
    }
    for (int l = 0; l < m.config().n_layers; ++l)
      for (int kv = 0; kv < m.config().n_kv_heads; ++kv)
        EXPECT_EQ(layered.held(l, kv), by_token.held(l, kv)) << "layer " << l << ", KV head " << kv;
    EXPECT_EQ(layered.position(), n);
    EXPECT_EQ(layered.peak_bytes_held(), by_token.peak_bytes_held());
    for (int t = n; t < n + 4; ++t) {
      const Eigen::RowVectorXf a = by_token.step(ids[static_cast<size_t>(t)]),
                               b = layered.step(ids[static_cast<size_t>(t)]);
      EXPECT_LT((a - b).cwiseAbs().maxCoeff(), 1e-4f * std::max(1.0f, a.cwiseAbs().maxCoeff())) << t;
    }
  }
}

// Under a shared budget too: a layer's KV heads (layered prefill steps them in lockstep) or the
// whole model (layer by layer only while the fed span decides nothing before its end, token by token
// otherwise) keep what token-by-token decoding keeps, which is what replay keeps with that scope on
// the decoder's own probabilities (tests/core/cache_manager_test.cpp); the heads' counts differ and
// together they hold the group's budget.
TEST(EvictingDecoder, SharedBudgetsKeepTheSameSetsLayeredOrTokenByToken) {
  const auto& m = test::tiny_model();
  const int n = 32, k = 8;
  const auto ids = test::gpl3_tokens(n + 3);
  const std::span<const int> input(ids.data(), static_cast<size_t>(n));
  for (const BudgetScope scope : {BudgetScope::Layer, BudgetScope::Model})
    for (const int prompt : {0, n}) {
      SCOPED_TRACE(budget_scope_name(scope) + " prompt " + std::to_string(prompt));
      CacheManagerOptions o = options(m, PolicyId::H2O, std::to_string(k), n + 3);
      o.run.budget_scope = scope;
      o.run.prompt_len = prompt;
      KvEvictionManager by_token_mgr(o), layered_mgr(o);
      const int slots = std::max(by_token_mgr.max_held(0, 0), prompt) + 1;  // the prompt is held whole
      model::EvictingDecoder by_token(m, by_token_mgr, slots), layered(m, layered_mgr, slots);
      for (int t = 0; t < n; ++t) by_token.step(ids[static_cast<size_t>(t)]);
      layered.prefill(input, /*all_logits=*/true);
      const int L = m.config().n_layers, H = m.config().n_kv_heads;
      size_t held = 0;
      bool moved = false;
      for (int l = 0; l < L; ++l) {
        size_t layer_held = 0;
        for (int kv = 0; kv < H; ++kv) {
          EXPECT_EQ(layered.held(l, kv), by_token.held(l, kv)) << "layer " << l << ", KV head " << kv;
          EXPECT_EQ(layered.held(l, kv), layered_mgr.held(0, l, kv));
          layer_held += layered.held(l, kv).size();
          moved |= layered.held(l, kv).size() != static_cast<size_t>(k);
        }
        if (scope == BudgetScope::Layer) {
          EXPECT_EQ(layer_held, static_cast<size_t>(H * k));
        }
        held += layer_held;
      }
      EXPECT_EQ(held, static_cast<size_t>(L * H * k));
      EXPECT_TRUE(moved);
      EXPECT_EQ(layered.peak_bytes_held(), by_token.peak_bytes_held());
      for (int t = n; t < n + 3; ++t) {
        const Eigen::RowVectorXf a = by_token.step(ids[static_cast<size_t>(t)]),
                                 b = layered.step(ids[static_cast<size_t>(t)]);
        EXPECT_LT((a - b).cwiseAbs().maxCoeff(), 1e-4f * std::max(1.0f, a.cwiseAbs().maxCoeff())) << t;
      }
    }
}

// Under an engine's contract (one kept set per layer, or for the whole model as llama.cpp's
// position removal imposes) every unit of a set holds the same positions, k of them, whether the
// input is fed token by token or layer by layer.
TEST(EvictingDecoder, ContractsKeepTiedSetsLayeredOrTokenByToken) {
  const auto& m = test::tiny_model();
  const int n = 32, k = 8;
  const auto ids = test::gpl3_tokens(n);
  for (const KeptSets sets : {KeptSets::Layer, KeptSets::Model}) {
    SCOPED_TRACE(kept_sets_name(sets));
    CacheManagerOptions o = options(m, PolicyId::H2O, "1", n);
    o.contract = EvictionContract{};
    o.contract->kept_sets = sets;
    o.contract->budget = k;
    o.contract->sinks = 2;
    o.contract->recent = 4;
    KvEvictionManager by_token_mgr(o), layered_mgr(o);
    EXPECT_EQ(by_token_mgr.max_held(0, 0), k);
    model::EvictingDecoder by_token(m, by_token_mgr, k + 1), layered(m, layered_mgr, k + 1);
    for (int t = 0; t < n; ++t) by_token.step(ids[static_cast<size_t>(t)]);
    layered.prefill(ids, /*all_logits=*/true);
    const int L = m.config().n_layers, H = m.config().n_kv_heads;
    for (int l = 0; l < L; ++l)
      for (int kv = 0; kv < H; ++kv) {
        EXPECT_EQ(layered.held(l, kv), by_token.held(l, kv)) << "layer " << l << ", KV head " << kv;
        EXPECT_EQ(layered.held(l, kv).size(), static_cast<size_t>(k));
        EXPECT_EQ(layered.held(l, kv), layered.held(l, 0));
        if (sets == KeptSets::Model) {
          EXPECT_EQ(layered.held(l, kv), layered.held(0, 0));
        }
      }
    EXPECT_EQ(layered.held(0, 0).front(), 0);  // the sinks stay
    EXPECT_EQ(layered.held(0, 0).back(), n - 1);
  }
}

// A contract that compresses once per prompt chunk decides nothing inside a chunk: the layered
// prefill runs each chunk layer by layer (the units of a layer ahead of the next layer's) and
// keeps what token by token keeps.
TEST(EvictingDecoder, ChunkedPrefillRunsLayeredUnderAModelWideContract) {
  const auto& m = test::tiny_model();
  const int n = 32, c = 8;
  const auto ids = test::gpl3_tokens(n);
  CacheManagerOptions o = options(m, PolicyId::H2O, "1", n);
  o.contract = EvictionContract{};
  o.contract->kept_sets = KeptSets::Model;
  o.contract->budget = 6;
  o.contract->sinks = 1;
  o.contract->recent = 2;
  o.contract->prompt_len = 24;
  o.contract->chunk = c;
  KvEvictionManager by_token_mgr(o), layered_mgr(o);
  EXPECT_FALSE(layered_mgr.lockstep_at(c - 2));
  EXPECT_TRUE(layered_mgr.lockstep_at(c - 1));
  const int slots = layered_mgr.max_held(0, 0) + 1;
  model::EvictingDecoder by_token(m, by_token_mgr, slots), layered(m, layered_mgr, slots);
  for (int t = 0; t < n; ++t) by_token.step(ids[static_cast<size_t>(t)]);
  for (int first = 0; first < 24; first += c)
    layered.prefill(std::span<const int>(ids).subspan(static_cast<size_t>(first), c));
  for (int t = 24; t < n; ++t) layered.step(ids[static_cast<size_t>(t)]);
  const int L = m.config().n_layers, H = m.config().n_kv_heads;
  for (int l = 0; l < L; ++l)
    for (int kv = 0; kv < H; ++kv) {
      EXPECT_EQ(layered.held(l, kv), by_token.held(l, kv)) << "layer " << l << ", KV head " << kv;
      EXPECT_EQ(layered.held(l, kv).size(), size_t(7));  // the last step is never compressed after
    }
}

// The last-token form returns the same row as the full matrix's last.
TEST(EvictingDecoder, LayeredPrefillLastRowIsTheLastLogits) {
  const auto& m = test::tiny_model();
  const auto ids = test::gpl3_tokens(24);
  KvEvictionManager a_mgr(options(m, PolicyId::H2O, "8", 24)), b_mgr(options(m, PolicyId::H2O, "8", 24));
  model::EvictingDecoder a(m, a_mgr, 9), b(m, b_mgr, 9);
  const model::MatrixRM all = a.prefill(ids, true), last = b.prefill(ids);
  ASSERT_EQ(last.rows(), 1);
  EXPECT_LT((all.row(23) - last.row(0)).cwiseAbs().maxCoeff(),
            1e-4f * std::max(1.0f, all.row(23).cwiseAbs().maxCoeff()));
}

// The pools without the model (what kvoracle.hf's EvictingCache drives): fed each layer's q, k, v by
// the model's layered forward pass, they evict exactly as the decoder with its model does, and
// refuse to decode on their own or to serve a manager of another shape.
TEST(EvictingDecoder, PoolsWithoutTheModelEvictAsTheDecoder) {
  const auto& m = test::tiny_model();
  const auto& c = m.config();
  const int n = 40, k = 8;
  const auto ids = test::gpl3_tokens(n);
  KvEvictionManager with_model(options(m, PolicyId::H2O, std::to_string(k), n));
  model::EvictingDecoder dec(m, with_model, k + 1);
  dec.prefill(ids);
  KvEvictionManager alone(options(m, PolicyId::H2O, std::to_string(k), n));
  const model::PoolShape shape{.n_layers = c.n_layers,
                               .n_kv_heads = c.n_kv_heads,
                               .head_dim = c.head_dim,
                               .group = c.n_heads / c.n_kv_heads,
                               .scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
  model::EvictingDecoder pools(shape, alone, k + 1);
  pools.set_eviction_log(true);
  m.forward_layered(ids, 0, pools, false);
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_kv_heads; ++h) {
      EXPECT_EQ(pools.held(l, h), dec.held(l, h)) << l << "," << h;
      EXPECT_EQ(pools.evictions(l, h).size(), static_cast<size_t>(n - k)) << l << "," << h;  // one per step past k
    }
  EXPECT_THROW(pools.step(ids[0]), kvo::Error);
  EXPECT_THROW(pools.prefill(ids), kvo::Error);
  model::PoolShape other = shape;
  other.n_kv_heads += 1;
  EXPECT_THROW(model::EvictingDecoder(other, alone, k + 1), kvo::Error);
}

// The pools' attention (the group's heads summed together, values in register tiles) rounds as a
// plain loop per query head over the rows in position order: float logits, float exp, a double
// sum, float weights times values added one row at a time. Bit for bit, at head sizes with and
// without a tail past 16 lanes and a group of 3, over more rows than one tile.
TEST(EvictingDecoder, PoolsRoundAsAPlainLoopPerHead) {
  for (const int hd : {20, 48}) {
    const int n = 150, n_kv = 2, group = 3, width = n_kv * group * hd;
    std::mt19937 rng(static_cast<unsigned>(hd));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const auto random = [&](int cols) {
      model::MatrixRM x(n, cols);
      for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
      return x;
    };
    const model::MatrixRM q = random(width), k = random(n_kv * hd), v = random(n_kv * hd);
    std::vector<model::MatrixRM> keys, values;  // per KV head, as a pool holds them: one row per position
    for (int kv = 0; kv < n_kv; ++kv) {
      keys.emplace_back(k.middleCols(kv * hd, hd));
      values.emplace_back(v.middleCols(kv * hd, hd));
    }
    CacheManagerOptions o;
    o.run.policy.id = PolicyId::H2O;
    o.run.budget = Budget(Amount::parse(std::to_string(n)));
    o.n_layers = 1;
    o.n_kv_heads = n_kv;
    o.max_len = n;
    KvEvictionManager manager(o);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    model::EvictingDecoder pools({.n_layers = 1, .n_kv_heads = n_kv, .head_dim = hd, .group = group, .scale = scale},
                                 manager, n + 1);
    model::MatrixRM out(n, width);
    pools.attend_layer(0, 0, q, k, v, out);
    model::MatrixRM expected(n, width);
    for (int t = 0; t < n; ++t)
      for (int h = 0; h < n_kv * group; ++h) {
        const int kv = h / group;
        const Eigen::Map<const Eigen::RowVectorXf> qh(q.row(t).data() + h * hd, hd);
        std::vector<double> p(static_cast<size_t>(t) + 1);
        float top = -INFINITY;
        for (int s = 0; s <= t; ++s) {
          const float sc = qh.dot(keys[static_cast<size_t>(kv)].row(s)) * scale;
          p[static_cast<size_t>(s)] = sc;
          top = std::max(top, sc);
        }
        double sum = 0.0;
        for (double& x : p) sum += (x = std::exp(static_cast<float>(x) - top));
        Eigen::RowVectorXf acc = Eigen::RowVectorXf::Zero(hd);
        for (int s = 0; s <= t; ++s)
          acc += static_cast<float>(p[static_cast<size_t>(s)] / sum) * values[static_cast<size_t>(kv)].row(s);
        expected.row(t).segment(h * hd, hd) = acc;
      }
    EXPECT_EQ(0, std::memcmp(out.data(), expected.data(), sizeof(float) * static_cast<size_t>(out.size())))
        << "head size " << hd << ": largest difference " << (out - expected).cwiseAbs().maxCoeff();
  }
}
