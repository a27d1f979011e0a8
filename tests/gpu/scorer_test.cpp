// The greedy scorer against the core replay engine (the CPU reference): the CPU twin must give
// the same cache at every step and the same accumulated scores; the CUDA back end must match the
// twin where a device exists (skipped with the reason otherwise).
#include "kvo/gpu/scorer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kvo/core/error.hpp"
#include "kvo/core/greedy_evictor.hpp"
#include "kvo/core/policies.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/gpu/device.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

struct CoreRun {
  ReplayResult replay;
  std::vector<std::vector<double>> final_scores;  // per head (replay order)
};

CoreRun core_run(const Trace& tr, const std::string& policy, const Budget& b, int prompt_len) {
  ReplayOptions o;
  o.run.policy = PolicySpec::named(policy);
  o.run.budget = b;
  o.run.prompt_len = prompt_len;
  o.threads = 2;
  CoreRun r;
  r.final_scores.resize(static_cast<size_t>(tr.n_layers * tr.n_heads));
  std::mutex mu;
  o.on_step = [&](int layer, int head, int step, const EvictionPolicy& p) {
    if (step != tr.n_tokens - 1) return;
    std::vector<double> s;
    if (const auto* g = dynamic_cast<const GreedyEvictor*>(&p)) s = g->accumulated();
    if (const auto* g = dynamic_cast<const H2OPolicy*>(&p)) s = g->scores();
    std::lock_guard<std::mutex> lock(mu);
    r.final_scores[static_cast<size_t>(layer * tr.n_heads + head)] = s;
  };
  r.replay = replay(tr, o);
  return r;
}

void expect_same(const Trace& tr, const ScorerResult& got, const CoreRun& want, int budget_index, double tol) {
  int checked = 0;
  for (const auto& u : got.units) {
    if (u.budget_index != budget_index) continue;
    const auto& h = want.replay.heads[static_cast<size_t>(u.layer * tr.n_heads + u.head)];
    ASSERT_EQ(h.layer, u.layer);
    ASSERT_EQ(h.head, u.head);
    for (int i = 0; i < tr.n_tokens; ++i)
      ASSERT_EQ(kept_after(u, i), h.steps[static_cast<size_t>(i)].kept)
          << "layer " << u.layer << " head " << u.head << " step " << i;
    const auto& s = want.final_scores[static_cast<size_t>(u.layer * tr.n_heads + u.head)];
    for (int j = 0; j < tr.n_tokens; ++j)
      ASSERT_NEAR(u.score[static_cast<size_t>(j)], s[static_cast<size_t>(j)],
                  tol * std::max(1.0, std::fabs(s[static_cast<size_t>(j)])))
          << "token " << j;
    ++checked;
  }
  EXPECT_EQ(checked, tr.n_layers * tr.n_heads);
}

Trace gqa_trace(std::uint64_t seed) {
  SynthOptions so;
  so.layers = 2;
  so.heads = 4;
  so.kv_heads = 2;
  so.tokens = 157;   // not a multiple of the twin's batch of 4 queries
  so.head_dim = 24;  // not a multiple of 8 on purpose
  so.seed = seed;
  return synthesize(so);
}

// The CUDA back end against the CPU twin: the same caches, scores to round-off.
void expect_device_matches_twin(const Trace& tr, ScorerOptions o) {
  o.device = ScorerDevice::Cuda;
  const ScorerResult gpu_r = run_scorer(tr, o);
  EXPECT_GT(gpu_r.kernel_seconds, 0.0);
  o.device = ScorerDevice::Cpu;
  const ScorerResult cpu_r = run_scorer(tr, o);
  ASSERT_EQ(gpu_r.units.size(), cpu_r.units.size());
  for (size_t x = 0; x < cpu_r.units.size(); ++x) {
    EXPECT_EQ(gpu_r.units[x].evict_step, cpu_r.units[x].evict_step) << "unit " << x;
    for (size_t j = 0; j < cpu_r.units[x].score.size(); ++j)
      EXPECT_NEAR(gpu_r.units[x].score[j], cpu_r.units[x].score[j], 1e-9 * std::max(1.0, cpu_r.units[x].score[j]));
  }
}

}  // namespace

TEST(Scorer, CpuTwinEqualsTheReplayEngine) {
  for (const char* policy : {"h2o", "h2o-paper"})
    for (int prompt : {0, 40})
      for (const char* budget : {"10%", "25%", "17"}) {
        const Trace tr = gqa_trace(3);
        ScorerOptions o;
        o.run.policy = PolicySpec::named(policy);
        o.run.budget = Budget::parse(budget);
        o.run.prompt_len = prompt;
        o.device = ScorerDevice::Cpu;
        const ScorerResult r = run_scorer(tr, o);
        EXPECT_NE(r.device.find("cpu twin"), std::string::npos);
        SCOPED_TRACE(std::string(policy) + " prompt " + std::to_string(prompt) + " budget " + budget);
        expect_same(tr, r, core_run(tr, policy, o.run.budget, prompt), 0, 0.0);
      }
}

TEST(Scorer, SeveralBudgetsInOnePass) {
  const Trace tr = gqa_trace(4);
  ScorerOptions o;
  o.totals = {Amount::parse("8"), Amount::parse("20%"), Amount::parse("50%")};
  o.device = ScorerDevice::Cpu;
  for (const char* recent : {"", "0"}) {  // every total takes the run's recent window
    o.run.budget = Budget::parse("10%", recent);
    const ScorerResult r = run_scorer(tr, o);
    ASSERT_EQ(r.units.size(), 3u * 2 * 4);
    const auto budgets = o.budgets();
    for (int b = 0; b < 3; ++b) expect_same(tr, r, core_run(tr, "h2o", budgets[static_cast<size_t>(b)], 0), b, 0.0);
  }
}

TEST(Scorer, ThreadCountDoesNotChangeResults) {
  const Trace tr = gqa_trace(5);
  ScorerOptions a, b;
  a.device = b.device = ScorerDevice::Cpu;
  a.threads = 1;
  b.threads = 3;
  const auto ra = run_scorer(tr, a), rb = run_scorer(tr, b);
  ASSERT_EQ(ra.units.size(), rb.units.size());
  for (size_t x = 0; x < ra.units.size(); ++x) {
    EXPECT_EQ(ra.units[x].evict_step, rb.units[x].evict_step);
    EXPECT_EQ(ra.units[x].score, rb.units[x].score);
  }
}

TEST(Scorer, RejectsWhatItCannotReplay) {
  ScorerOptions tova;
  tova.run.policy = PolicySpec::named("tova");
  EXPECT_THROW(tova.variant(), Error);
  EXPECT_THROW(parse_scorer_device("tpu"), Error);
  Trace dense;
  dense.resize_layers(1);
  dense.n_heads = dense.n_kv_heads = 1;
  dense.n_tokens = 4;
  dense.attn[0].assign(16, 0.25f);
  ScorerOptions o;
  o.run.budget = Budget::parse("2");
  o.device = ScorerDevice::Cpu;
  EXPECT_THROW(run_scorer(dense, o), Error);
}

TEST(Scorer, CudaBackEndMatchesTheTwin) {
  std::string why;
  if (gpu::device_count(&why) == 0) {
    ScorerOptions o;
    o.device = ScorerDevice::Cuda;
    EXPECT_THROW(run_scorer(gqa_trace(6), o), Error);  // one clear error, no crash
    GTEST_SKIP() << "no CUDA device: " << why;
  }
  for (const char* policy : {"h2o", "h2o-paper"})
    for (const char* recent : {"", "100%"}) {  // 100%: no candidate outside the window, the oldest leaves
      const Trace tr = gqa_trace(6);
      ScorerOptions o;
      o.run.policy = PolicySpec::named(policy);
      o.run.budget = Budget::parse("10%", recent);
      o.totals = {Amount::parse("10%"), Amount::parse("30%")};
      o.run.prompt_len = 30;
      SCOPED_TRACE(std::string(policy) + " recent " + recent);
      expect_device_matches_twin(tr, o);
    }
}

// A prompt longer than the per-slot state that fits in a block's shared memory (about 11 000
// slots on current GPUs): the kernel keeps the state in global memory instead.
TEST(Scorer, CudaBackEndMatchesTheTwinWithStateInGlobalMemory) {
  std::string why;
  if (gpu::device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  const Trace tr = test::synthetic_layer(1, 1, 12300, 16, 12000, 2);
  ScorerOptions o;
  o.totals = {Amount::parse("2%")};
  o.run.prompt_len = 12000;
  expect_device_matches_twin(tr, o);
}

TEST(Scorer, CpuTwinEqualsTheReplayEngineOnTheRealModelTrace) {
  const Trace tr = read_trace(std::string(KVO_SOURCE_DIR) + "/tests/data/golden-gpl3-128.safetensors");
  for (const char* policy : {"h2o", "h2o-paper"}) {
    ScorerOptions o;
    o.run.policy = PolicySpec::named(policy);
    o.run.budget = Budget::parse("20%");
    o.device = ScorerDevice::Cpu;
    SCOPED_TRACE(policy);
    expect_same(tr, run_scorer(tr, o), core_run(tr, policy, o.run.budget, 0), 0, 0.0);
  }
}
