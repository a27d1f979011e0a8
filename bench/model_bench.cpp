// The real model on 2 cores: prefill of 1024 tokens (target >= 200 tokens/s), with and without
// the logits of every position, one decode step with a full cache, and eval prefill's rows.
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "kvo/core/cache_manager.hpp"
#include "kvo/model/evicting_decoder.hpp"
#include "kvo/model/llama.hpp"
#include "kvo/model/model_path.hpp"
#include "kvo/studies/press_eval.hpp"
#include "kvo/studies/task_eval.hpp"

using namespace kvo;

namespace {

const model::Llama* shared() {
  static std::unique_ptr<model::Llama> m;
  if (!m && std::filesystem::exists(model::default_model_path()))
    m = std::make_unique<model::Llama>(model::default_model_path());
  return m.get();
}

std::vector<int> gpl3_tokens(const model::Llama& m, size_t n) {
  std::ifstream in("/usr/share/common-licenses/GPL-3");
  std::stringstream ss;
  ss << in.rdbuf();
  auto ids = m.tokenizer().encode(ss.str());
  ids.resize(n);
  return ids;
}

void BM_Prefill(benchmark::State& st) {
  const model::Llama* m = shared();
  if (!m) return st.SkipWithError("model missing: run scripts/fetch-model");
  const int n = static_cast<int>(st.range(0));
  const bool logits = st.range(1) != 0;
  const auto ids = gpl3_tokens(*m, static_cast<size_t>(n));
  for (auto _ : st) {
    auto cache = m->new_cache(n);
    for (int s = 0; s < n; s += 256)
      benchmark::DoNotOptimize(
          m->forward(std::span<const int>(ids.data() + s, static_cast<size_t>(std::min(256, n - s))), cache, logits));
  }
  st.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
}

void BM_DecodeStep(benchmark::State& st) {
  const model::Llama* m = shared();
  if (!m) return st.SkipWithError("model missing: run scripts/fetch-model");
  const int n = static_cast<int>(st.range(0));
  const auto ids = gpl3_tokens(*m, static_cast<size_t>(n));
  auto cache = m->new_cache(n + 1);
  m->forward(std::span<const int>(ids.data(), static_cast<size_t>(n)), cache, false);
  for (auto _ : st) {
    cache.length = n;
    benchmark::DoNotOptimize(m->forward(std::span<const int>(ids.data(), 1), cache, true));
  }
  st.counters["tokens_per_s"] = benchmark::Counter(static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
}

// Decoding with real eviction (EvictingDecoder + KvEvictionManager, h2o): 256 tokens token by
// token at budget k per (layer, KV head); k = 256 is the full cache through the same path.
// bits > 0: the pools store K/V quantized (eval --kv-bits), against the same decode in fp32
// (model/evicting-decode/k, its baseline in the same run).
template <int Bits>
void BM_EvictingDecode(benchmark::State& st) {
  const model::Llama* m = shared();
  if (!m) return st.SkipWithError("model missing: run scripts/fetch-model");
  const int n = 256, k = static_cast<int>(st.range(0));
  const auto ids = gpl3_tokens(*m, static_cast<size_t>(n));
  size_t bytes = 0;
  for (auto _ : st) {
    CacheManagerOptions o;
    o.run.policy.id = PolicyId::H2O;
    o.run.budget = Budget(Amount{false, static_cast<double>(k)});
    o.n_layers = m->config().n_layers;
    o.n_kv_heads = m->config().n_kv_heads;
    o.max_len = n;
    KvEvictionManager mgr(o);
    model::EvictingDecoder dec(*m, mgr, k + 1);
    dec.set_kv_quantization({Bits, 64});
    for (int t = 0; t < n; ++t) benchmark::DoNotOptimize(dec.step(ids[static_cast<size_t>(t)]));
    bytes = dec.peak_bytes_held();
  }
  st.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
  st.counters["peak_kv_bytes"] = static_cast<double>(bytes);
}

// eval prefill on P = 512 of 640 GPL-3 tokens: the trace, the prefill units and their output
// pass, one prefill, then a continuation per row; rows: snapkv at 0.8 and the two references.
// Its baseline in the same run: model/prefill/640/1 (one forward pass of the same tokens).
void BM_PressEval(benchmark::State& st) {
  const model::Llama* m = shared();
  if (!m) return st.SkipWithError("model missing: run scripts/fetch-model");
  std::ifstream in("/usr/share/common-licenses/GPL-3");
  std::stringstream ss;
  ss << in.rdbuf();
  studies::PressEvalOptions o;
  o.tokens = 640;
  o.prompt_len = 512;
  PressOptions p;
  p.id = PressId::SnapKV;
  p.compression_ratio = 0.8;
  o.presses = {p};
  o.reference_ratios = {0.8};
  for (auto _ : st) benchmark::DoNotOptimize(studies::evaluate_presses(*m, ss.str(), o).full_nll);
  st.counters["rows"] = static_cast<double>(studies::press_eval_rows(o));
}

// One generated niah instance of n tokens (kvoracle tasks run): the baseline is a full-attention
// prefill of its input (model/task/prefill/n: chunks of 256 tokens, no logits); the target is
// the whole instance under h2o at 20% (model/task/h2o/n: the layered prefill with eviction at
// every step, then the answer decoded token by token) in at most 2x the baseline.
const studies::TaskInstance& niah_instance(const model::Llama& m, int n) {
  static std::map<int, studies::TaskInstance> cache;
  auto it = cache.find(n);
  if (it == cache.end()) {
    studies::TaskSuiteRequest r;
    r.tasks = {studies::TaskId::Niah};
    r.lengths = {n};
    r.depths = {0.5};
    r.per_cell = 1;
    it = cache.emplace(n, studies::generate_tasks(m.tokenizer(), r).front()).first;
  }
  return it->second;
}

void BM_TaskPrefill(benchmark::State& st) {
  const model::Llama* m = shared();
  if (!m) return st.SkipWithError("model missing: run scripts/fetch-model");
  const studies::TaskTokens t = studies::task_tokens(m->tokenizer(), niah_instance(*m, static_cast<int>(st.range(0))));
  std::vector<int> ids = t.context;
  ids.insert(ids.end(), t.question.begin(), t.question.end());
  const int n = static_cast<int>(ids.size());
  for (auto _ : st) {  // in chunks of 256, as the recorder and the full-cache row prefill
    auto cache = m->new_cache(n);
    for (int s = 0; s < n; s += 256)
      benchmark::DoNotOptimize(
          m->forward(std::span<const int>(ids.data() + s, static_cast<size_t>(std::min(256, n - s))), cache, false));
  }
  st.counters["tokens"] = static_cast<double>(n);
}

void BM_TaskUnderPolicy(benchmark::State& st) {
  const model::Llama* m = shared();
  if (!m) return st.SkipWithError("model missing: run scripts/fetch-model");
  const std::vector<studies::TaskInstance> one{niah_instance(*m, static_cast<int>(st.range(0)))};
  studies::TaskEvalRequest r;
  r.policies = {PolicyId::H2O};
  r.budgets = {0.2};
  r.full_cache = false;
  r.topk = false;
  double score = 0;
  for (auto _ : st) score = studies::evaluate_tasks(*m, one, r).outcomes.back().score;
  st.counters["score"] = score;
}

// What eviction buys at long context: the last 64 tokens of an 8 192-position niah instance
// decoded one at a time (teacher-forced) after a prefill of the rest. Arg 100: the full cache
// (Llama::forward on a KvCache, the prefill in chunks of 256); arg b < 100: h2o at b% of the
// positions per (layer, KV head) in the EvictingDecoder (its layered prefill, then step()). Timed:
// the 64 decoding steps only; counters: tokens/s, the K/V bytes held after the last step.
void BM_LongDecode(benchmark::State& st) {
  const model::Llama* m = shared();
  if (!m) return st.SkipWithError("model missing: run scripts/fetch-model");
  const studies::TaskTokens t = studies::task_tokens(m->tokenizer(), niah_instance(*m, 8192));
  std::vector<int> ids = t.context;
  ids.insert(ids.end(), t.question.begin(), t.question.end());
  const int n = static_cast<int>(ids.size()), decode = 64, share = static_cast<int>(st.range(0));
  const std::span<const int> head(ids.data(), static_cast<size_t>(n - decode));
  const model::LlamaConfig& c = m->config();
  double held = 0;
  for (auto _ : st) {
    std::chrono::steady_clock::time_point start;
    if (share == 100) {
      auto cache = m->new_cache(n);
      for (size_t s = 0; s < head.size(); s += 256)
        m->forward(head.subspan(s, std::min<size_t>(256, head.size() - s)), cache, false);
      start = std::chrono::steady_clock::now();
      for (int x = n - decode; x < n; ++x)
        benchmark::DoNotOptimize(m->forward(std::span<const int>(&ids[static_cast<size_t>(x)], 1), cache, true));
      held = static_cast<double>(cache.length) * c.n_layers * c.n_kv_heads * c.head_dim * 2 * sizeof(float);
    } else {
      const int k = n * share / 100;
      CacheManagerOptions o;
      o.run.policy = PolicySpec::named(policy_name(PolicyId::H2O));
      o.run.budget = Budget(Amount{false, static_cast<double>(k)});
      o.n_layers = c.n_layers;
      o.n_kv_heads = c.n_kv_heads;
      o.max_len = n;
      KvEvictionManager mgr(o);
      model::EvictingDecoder dec(*m, mgr, k + 1);
      dec.prefill(head);
      start = std::chrono::steady_clock::now();
      for (int x = n - decode; x < n; ++x) benchmark::DoNotOptimize(dec.step(ids[static_cast<size_t>(x)]));
      held = static_cast<double>(dec.bytes_held());
    }
    st.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  st.counters["tokens_per_s"] = benchmark::Counter(static_cast<double>(decode) * static_cast<double>(st.iterations()),
                                                   benchmark::Counter::kIsRate);
  st.counters["kv_bytes_held"] = held;
  st.counters["positions"] = static_cast<double>(n);
}

// The evicting pools alone (EvictingDecoder over a PoolShape, no model), as kvoracle.hf's
// EvictingCache drives them in one layer of Llama-3.2-1B's shape (8 KV heads, groups of 4 query
// heads of 64): n tokens of seeded random q, k, v through attend_layer, h2o keeping 20% of n per
// (layer, KV head). Counter `checksum`: the sum of the outputs, which a rewrite of the attention
// must leave unchanged to the bit.
void BM_EvictingPools(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), n_kv = 8, group = 4, hd = 64;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto random = [&](int cols) {
    model::MatrixRM m(n, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
  };
  const model::MatrixRM q = random(n_kv * group * hd), k = random(n_kv * hd), v = random(n_kv * hd);
  model::MatrixRM out(n, n_kv * group * hd);
  for (auto _ : st) {
    CacheManagerOptions o;
    o.run.policy.id = PolicyId::H2O;
    o.run.budget = Budget(Amount{false, static_cast<double>(n / 5)});
    o.n_layers = 1;
    o.n_kv_heads = n_kv;
    o.max_len = n;
    KvEvictionManager mgr(o);
    model::EvictingDecoder pools(
        model::PoolShape{.n_layers = 1, .n_kv_heads = n_kv, .head_dim = hd, .group = group, .scale = 0.125f}, mgr,
        model::decoder_slots(mgr));
    pools.attend_layer(0, 0, q, k, v, out);
    benchmark::DoNotOptimize(out.data());
  }
  st.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
  st.counters["checksum"] = static_cast<double>(out.cast<double>().sum());
}

}  // namespace

BENCHMARK(BM_TaskPrefill)
    ->Name("model/task/prefill")
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_TaskUnderPolicy)
    ->Name("model/task/h2o")
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LongDecode)
    ->Name("model/long-decode")
    ->Arg(100)
    ->Arg(20)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PressEval)->Name("model/press-eval/640")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EvictingDecode<0>)
    ->Name("model/evicting-decode")
    ->Arg(25)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_EvictingDecode<4>)
    ->Name("model/evicting-decode-int4")
    ->Arg(25)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_EvictingPools)
    ->Name("model/evicting-pools")
    ->Arg(2048)
    ->Arg(8192)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Prefill)
    ->Name("model/prefill")
    ->Args({640, 1})
    ->Args({1024, 0})
    ->Args({1024, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_DecodeStep)->Name("model/decode-step")->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
