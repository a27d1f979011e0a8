// kvoracle inside llama.cpp, on the tiny test model: llama.cpp's cache really shrinks to the
// budget and holds what the manager holds, its decisions equal kvoracle's decoder's except at near
// ties, and what cannot work with eviction is refused in one line naming the setting.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "kvo/core/error.hpp"
#include "kvo/llama_cpp/evicting_context.hpp"
#include "kvo/llama_cpp/llama_study.hpp"
#include "llama.h"
#include "model_fixture.hpp"

namespace kvo {
namespace {

llama_model* tiny_llama() {
  static const std::unique_ptr<llama_model, void (*)(llama_model*)> m = [] {
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    llama_backend_init();
    return std::unique_ptr<llama_model, void (*)(llama_model*)>(
        llama_model_load_from_file(test::tiny_model_path().c_str(), llama_model_default_params()), llama_model_free);
  }();
  return m.get();
}

llama_cpp::EvictingContextOptions options(int n, int budget) {
  llama_cpp::EvictingContextOptions o;
  o.contract.kept_sets = KeptSets::Model;
  o.contract.budget = budget;
  o.contract.sinks = 2;
  o.contract.recent = 4;
  o.max_len = n;
  return o;
}

void expect_refused(const llama_cpp::EvictingContextOptions& o, const std::string& naming) {
  try {
    llama_cpp::EvictingContext ctx(tiny_llama(), o);
    ADD_FAILURE() << "not refused: " << naming;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(naming), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(LlamaCpp, TheCacheShrinksToTheBudgetAndHoldsWhatTheManagerHolds) {
  ASSERT_NE(tiny_llama(), nullptr);
  const int n = 80, k = 24;
  const auto ids = test::gpl3_tokens(n);
  llama_cpp::EvictingContext ctx(tiny_llama(), options(n, k));
  EXPECT_EQ(ctx.manager().max_held(0, 0), k);
  long evicted = 0;
  for (int t = 0; t < n; ++t) {
    const std::vector<int> gone = ctx.decode(ids[static_cast<size_t>(t)]);
    evicted += static_cast<long>(gone.size());
    ASSERT_EQ(ctx.held().size(), static_cast<size_t>(std::min(t + 1, k))) << "position " << t;
    ASSERT_EQ(ctx.held(), ctx.manager().held(0, 0, 0));
    EXPECT_NE(ctx.logits(), nullptr);
  }
  EXPECT_EQ(evicted, n - k);
  EXPECT_EQ(ctx.held().front(), 0);  // the sinks
  EXPECT_EQ(ctx.held()[1], 1);
  EXPECT_EQ(ctx.held().back(), n - 1);  // the window
  // llama.cpp's own accounting: the sequence's state is that of k cells, not n.
  const llama_cpp::LlamaSpeed speed = llama_cpp::measure_speed(tiny_llama(), ids, options(n, k));
  EXPECT_EQ(speed.held, k);
  EXPECT_EQ(speed.evictions, n - k);
  EXPECT_EQ(speed.evicting_state_bytes, ctx.state_bytes());
  EXPECT_LT(speed.evicting_state_bytes * 2, speed.full_state_bytes);
  EXPECT_GT(speed.full_tok_s, 0);
  EXPECT_NE(speed.render().find("| 80 | 24 |"), std::string::npos) << speed.render();
}

TEST(LlamaCpp, DecisionsEqualKvoraclesDecoderExceptAtNearTies) {
  const int n = 96, k = 20;
  const auto ids = test::gpl3_tokens(n);
  // Scissorhands's marks are not a sum over heads: they show the KV heads' grouping.
  for (const PolicyId policy : {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands}) {
    SCOPED_TRACE(policy_name(policy));
    llama_cpp::EvictingContextOptions o = options(n, k);
    o.policy = policy;
    const llama_cpp::DecisionComparison c =
        llama_cpp::compare_decisions(test::tiny_model(), tiny_llama(), ids, o, 1e-3);
    EXPECT_EQ(c.decisions, n - k);
    EXPECT_EQ(c.equal + static_cast<long>(c.departures.size()), c.decisions);
    EXPECT_EQ(c.beyond_tolerance(), 0) << c.render();
    EXPECT_GT(c.equal, c.decisions * 9 / 10) << c.render();
    EXPECT_LT(c.max_score_difference, 1e-3) << c.render();
  }
  // Compressing the prompt once per chunk of 16, llama.cpp fed the prompt in batches: each
  // compression evicts 16 positions at once, and decoding then evicts at every step.
  llama_cpp::EvictingContextOptions o = options(n, 16);
  o.contract.prompt_len = 64;
  o.contract.chunk = 16;
  const llama_cpp::DecisionComparison c = llama_cpp::compare_decisions(test::tiny_model(), tiny_llama(), ids, o, 1e-3);
  EXPECT_EQ(c.decisions, 3 + (n - 1 - 64));  // after positions 31, 47, 63, then 64 .. n - 2
  EXPECT_EQ(c.beyond_tolerance(), 0) << c.render();
}

// prefill() decodes in batches wherever the contract decides nothing inside one, and ends where
// token by token would: the same positions held, the same evictions, the same logits up to the
// batched products' rounding. Per-step eviction batches the tokens before the cache can fill;
// compressions once per prompt chunk batch each chunk.
TEST(LlamaCpp, PrefillInBatchesEqualsTokenByToken) {
  const int n = 96;
  const auto ids = test::gpl3_tokens(n);
  llama_cpp::EvictingContextOptions per_step = options(n, 40), chunks = options(n, 16);
  chunks.contract.prompt_len = 64;
  chunks.contract.chunk = 16;
  for (llama_cpp::EvictingContextOptions o : {per_step, chunks}) {
    SCOPED_TRACE(o.contract.chunk > 0 ? "prefill chunks" : "every step");
    o.batch = 32;
    llama_cpp::EvictingContext by_token(tiny_llama(), o), batched(tiny_llama(), o);
    std::vector<int> gone_by_token;
    for (int t : ids) {
      const std::vector<int> g = by_token.decode(t);
      gone_by_token.insert(gone_by_token.end(), g.begin(), g.end());
    }
    std::sort(gone_by_token.begin(), gone_by_token.end());
    EXPECT_EQ(batched.prefill(ids), gone_by_token);
    EXPECT_EQ(batched.held(), by_token.held());
    EXPECT_EQ(batched.position(), n);
    EXPECT_EQ(by_token.llama_decodes(), n);
    // every step: positions 0..39 in two batches (the cache can exceed 40 after position 39), then
    // one each; chunks: four prompt chunks of 16, then the decoding steps one by one.
    EXPECT_EQ(batched.llama_decodes(), o.contract.chunk > 0 ? 4 + (n - 64) : 2 + (n - 40));
    const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(tiny_llama()));
    float worst = 0, scale = 0;
    for (int v = 0; v < vocab; ++v) {
      worst = std::max(worst, std::abs(batched.logits()[v] - by_token.logits()[v]));
      scale = std::max(scale, std::abs(by_token.logits()[v]));
    }
    EXPECT_LT(worst, 1e-3f * std::max(1.0f, scale));
  }
}

// A steer that names what llama.cpp cannot evict fails that step's decode in one line, and the
// context refuses to go on.
TEST(LlamaCpp, AFailureInsideTheGraphSurfacesFromDecode) {
  const int n = 40, k = 16;
  const auto ids = test::gpl3_tokens(n);
  llama_cpp::EvictingContextOptions o = options(n, k);
  o.steer = [](const EvictionChoice&, std::vector<int>& tokens) { tokens = {0}; };  // a sink
  llama_cpp::EvictingContext ctx(tiny_llama(), o);
  for (int t = 0; t < k; ++t) ctx.decode(ids[static_cast<size_t>(t)]);
  try {
    ctx.decode(ids[static_cast<size_t>(k)]);
    ADD_FAILURE() << "the bad steer was not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("position 16: eviction steer at step 16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ctx.decode(ids[static_cast<size_t>(k + 1)]), Error);
}

// docs/llama.md's example.
TEST(LlamaCpp, TheDocSnippetRuns) {
  llama_model* model = tiny_llama();
  const std::vector<int> tokens = test::gpl3_tokens(64);
  // --8<-- [start:llama]
  kvo::llama_cpp::EvictingContextOptions o;
  o.policy = kvo::PolicyId::H2O;                // its score summed over every layer and KV head
  o.contract.kept_sets = kvo::KeptSets::Model;  // what llama_memory_seq_rm can remove
  o.contract.budget = 32;                       // the positions llama.cpp's cache holds
  o.contract.sinks = 4;
  o.contract.recent = 8;
  o.max_len = 64;
  kvo::llama_cpp::EvictingContext ctx(model, o);  // creates the llama.cpp context
  long evicted = 0;
  for (int token : tokens) {
    evicted += static_cast<long>(ctx.decode(token).size());  // already gone from llama.cpp's cache
    const float* logits = ctx.logits();                      // the next token's, as llama_get_logits_ith
    (void)logits;
  }
  // --8<-- [end:llama]
  EXPECT_EQ(evicted, 32);
  EXPECT_EQ(ctx.held().size(), 32u);
}

TEST(LlamaCpp, RefusesWhatCannotWorkWithEviction) {
  llama_cpp::EvictingContextOptions o = options(64, 16);
  o.flash_attn = true;
  expect_refused(o, "flash attention on");
  o = options(64, 16);
  o.sequences = 2;
  expect_refused(o, "n_seq_max = 2");
  o = options(64, 16);
  o.contract.kept_sets = KeptSets::Layer;
  expect_refused(o, "kept sets layer");
  o = options(64, 16);
  o.context = 8;
  expect_refused(o, "n_ctx = 8");
  const int trained = llama_model_n_ctx_train(tiny_llama());
  o = options(trained + 8, trained);
  expect_refused(o, "budget " + std::to_string(trained));
  o = options(64, 16);
  o.policy = PolicyId::Random;
  expect_refused(o, "random");
  o = options(64, 80);
  expect_refused(o, "budget");  // the contract's own check: k within [1, n]
}

}  // namespace
}  // namespace kvo
