// Core hot paths: greedy optimisers on facility location, marginal gains, replay per policy.
#include <benchmark/benchmark.h>

#include "bench_inputs.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/core/replay.hpp"

using namespace kvo;

namespace {

template <GreedyResult (*Opt)(const SetFunction&, const GreedyOptions&)>
void BM_Greedy(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), k = static_cast<int>(st.range(1));
  const FacilityLocation f(bench::similarity(64, n, 1));
  GreedyOptions o;
  o.budget = k;
  long long evals = 0;
  for (auto _ : st) {
    const auto r = Opt(f, o);
    evals = r.evaluations;
    benchmark::DoNotOptimize(r.value);
  }
  st.counters["gain_evals"] = static_cast<double>(evals);
}

void BM_MarginalGain(benchmark::State& st) {
  const int rows = static_cast<int>(st.range(0));
  const FacilityLocation f(bench::similarity(rows, 256, 2));
  auto memo = f.empty_memo();
  for (int j = 0; j < 8; ++j) f.add(*memo, j * 16);
  int j = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(f.gain(*memo, j));
    j = (j + 1) & 255;
  }
  st.SetItemsProcessed(st.iterations());
}

void BM_Replay(benchmark::State& st, const char* policy) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = bench::trace(n, 64);
  ReplayOptions o;
  o.policy.name = policy;
  o.budget = Budget(Amount::parse("0.2"));
  o.threads = 1;
  o.record_sets = false;
  for (auto _ : st) benchmark::DoNotOptimize(replay(tr, o).heads.size());
  st.SetItemsProcessed(st.iterations() * n);  // head-steps
}

}  // namespace

BENCHMARK(BM_Greedy<naive_greedy>)
    ->Name("greedy/naive")
    ->Args({1000, 10})
    ->Args({1000, 50})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Greedy<lazy_greedy>)
    ->Name("greedy/lazy")
    ->Args({1000, 10})
    ->Args({1000, 50})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Greedy<stochastic_greedy>)
    ->Name("greedy/stochastic")
    ->Args({1000, 10})
    ->Args({1000, 50})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MarginalGain)->Name("gain/facility-location")->Arg(16)->Arg(256);
BENCHMARK_CAPTURE(BM_Replay, full, "full")->Name("replay/full")->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, h2o, "h2o")->Name("replay/h2o")->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, h2o_mask, "h2o-mask")
    ->Name("replay/h2o-mask")
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, h2o_paper, "h2o-paper")
    ->Name("replay/h2o-paper")
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, tova, "tova")->Name("replay/tova")->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, window, "window")
    ->Name("replay/window")
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond);
