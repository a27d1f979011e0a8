// The conformance kit's cost: the checker on a golden file's own decisions, against making the
// golden file itself (one replay of the policy with every step's sets and scores recorded), a
// golden file under llama.cpp's one kept set for the model against the per-head one on the same
// trace, and a press's golden file against the press alone on the same prompt.
#include <benchmark/benchmark.h>

#include "kvo/conformance/check.hpp"
#include "kvo/conformance/golden.hpp"
#include "kvo/conformance/tie_trace.hpp"

namespace {

using namespace kvo::conformance;

GoldenRequest tova_request(int n) {
  GoldenRequest r;
  r.policies = {kvo::PolicyId::Tova};
  r.budgets = {std::to_string(n / 8)};
  r.threads = 1;
  return r;
}

kvo::Trace bench_trace(int n) { return tie_trace({.layers = 1, .heads = 2, .kv_heads = 1, .tokens = n}); }

void BM_Golden(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const kvo::Trace tr = bench_trace(n);
  for (auto _ : st) benchmark::DoNotOptimize(make_golden(tr, tova_request(n), "bench"));
}

void BM_Check(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const GoldenFile g = make_golden(bench_trace(n), tova_request(n), "bench");
  const std::vector<Decision> own = golden_decisions(g.cases[0]);
  for (auto _ : st) benchmark::DoNotOptimize(check_conformance(g, own));
  st.counters["decisions"] = static_cast<double>(n);
}

// 2 layers x 2 KV heads, TOVA at n/8 per KV head (range 1 = 0) or one set of n/8 for the model (1).
void BM_GoldenTied(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const kvo::Trace tr = tie_trace({.layers = 2, .heads = 4, .kv_heads = 2, .tokens = n});
  GoldenRequest r = tova_request(n);
  if (st.range(1) == 1) {
    r.budgets.clear();
    r.contract = R"({"engine": "llama.cpp", "n_ctx": )" + std::to_string(n / 8) +
                 R"(, "kv_evict_sink": 4, "kv_evict_window": 4})";
  }
  for (auto _ : st) benchmark::DoNotOptimize(make_golden(tr, r, "bench"));
}

// SnapKV (window 16) at ratio 0.5 on the press trace's 2 layers x 2 KV heads: the press alone on every
// layer (range 1 = 0), or its golden file with every step recorded (1).
void BM_GoldenPress(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const kvo::Trace tr = press_tie_trace({.tokens = n});
  GoldenRequest r;
  r.presses = {"snapkv"};
  r.press.window_size = 16;
  r.threads = 1;
  kvo::PressOptions o = r.press;
  o.id = kvo::PressId::SnapKV;
  for (auto _ : st) {
    if (st.range(1) == 1) {
      benchmark::DoNotOptimize(make_golden(tr, r, "bench"));
      continue;
    }
    for (int l = 0; l < tr.n_layers; ++l) benchmark::DoNotOptimize(kvo::run_press(kvo::press_layer_of(tr, l, n), o));
  }
}

BENCHMARK(BM_Golden)->Name("conformance/golden")->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check)->Name("conformance/check")->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GoldenTied)
    ->Name("conformance/golden_model_set")
    ->ArgsProduct({{256, 1024}, {0, 1}})
    ->ArgNames({"n", "tied"})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GoldenPress)
    ->Name("conformance/golden_press")
    ->ArgsProduct({{256, 1024}, {0, 1}})
    ->ArgNames({"n", "golden"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
