// The greedy scorer: the CPU twin on one head (against replay/h2o, the engine it reproduces), its
// scoring loop alone (logits over the kept slots) with the machine's own roofline measured in
// the same run (vector multiply+add throughput and read bandwidth of an L2-resident block), and
// the CUDA back end on a whole trace (skipped without a device; counters give bytes per step).
#include <benchmark/benchmark.h>

#include <chrono>
#include <random>
#include <vector>

#include "bench_inputs.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/gpu/device.hpp"
#include "kvo/gpu/scorer.hpp"
#include "kvo/gpu/scorer_math.hpp"

using namespace kvo;

namespace {

// `heads` heads, one thread, budget `percent`% of n: n * heads head-steps per run.
void run_scorer_bench(benchmark::State& st, int n, int d, int percent, int heads = 1) {
  const Trace& tr = bench::trace(n, d, heads);
  ScorerOptions o;
  o.device = ScorerDevice::Cpu;
  o.threads = 1;
  o.run.budget = Budget::parse(std::to_string(percent) + "%");
  for (auto _ : st) benchmark::DoNotOptimize(run_scorer(tr, o).units.size());
  st.SetItemsProcessed(st.iterations() * n * heads);
}

// Arguments: n tokens, head_dim d (budget 20%), as replay/h2o (its baseline).
void BM_ScorerCpu(benchmark::State& st) {
  run_scorer_bench(st, static_cast<int>(st.range(0)), static_cast<int>(st.range(1)), 20);
}

// Arguments: n, d, budget in percent of n, as replay/h2o-budget (its baseline).
void BM_ScorerBudget(benchmark::State& st) {
  run_scorer_bench(st, static_cast<int>(st.range(0)), static_cast<int>(st.range(1)), static_cast<int>(st.range(2)));
}

// Arguments: n, d, heads (one layer, budget 20%, one thread).
void BM_ScorerHeads(benchmark::State& st) {
  run_scorer_bench(st, static_cast<int>(st.range(0)), static_cast<int>(st.range(1)), 20, static_cast<int>(st.range(2)));
}

// The scoring loop: logits of one query over `slots` keys (d = 64) in the twin's fp64 block store.
void BM_ScorerLogits(benchmark::State& st) {
  const int slots = static_cast<int>(st.range(0)), d = 64;
  std::mt19937 g(1);
  std::normal_distribution<float> N;
  std::vector<double> keys(static_cast<size_t>(slots) * d);
  std::vector<float> q(static_cast<size_t>(d));
  for (auto& x : keys) x = N(g);
  for (auto& x : q) x = N(g);
  std::vector<double> out(static_cast<size_t>(slots));
  for (auto _ : st) {
    scorer::store_dot_fp64(q.data(), keys.data(), slots, d, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double flops = scorer_flops_per_step(slots, d), bytes = 8.0 * slots * d;
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["flop/byte"] = flops / bytes;
}

// Peak of the loop's arithmetic: independent fp64 multiply-then-add chains (no FMA, as the
// scoring loop compiles without contraction), 16 x 8 lanes, one thread.
void BM_PeakMulAdd(benchmark::State& st) {
  constexpr int kAcc = 128;
  alignas(64) double acc[kAcc];
  for (int t = 0; t < kAcc; ++t) acc[t] = 1.0 + t * 1e-3;
  const double a = 0.999999, c = 1e-7;
  constexpr int kReps = 256;
  for (auto _ : st) {
    for (int r = 0; r < kReps; ++r)
      for (int t = 0; t < kAcc; ++t) acc[t] = acc[t] * a + c;
    benchmark::DoNotOptimize(acc);
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * kAcc * kReps * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Read bandwidth of a block the size of the key store of `slots` slots (d = 64, fp64): the data
// the logits loop of the same size reads (64 slots: L1, 208: L2, 1024: L2).
void BM_ReadBandwidth(benchmark::State& st) {
  const size_t doubles = static_cast<size_t>(st.range(0)) * 64;  // the key store of st.range(0) slots
  std::vector<double> buf(doubles, 1.0);
  constexpr int kAcc = 32;  // 8 vector registers of independent sums: no add-latency stall
  for (auto _ : st) {
    double s[kAcc] = {};
    for (size_t x = 0; x + kAcc <= doubles; x += kAcc)
      for (int t = 0; t < kAcc; ++t) s[t] += buf[x + static_cast<size_t>(t)];
    benchmark::DoNotOptimize(s);
  }
  st.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(doubles) * 8e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The whole-trace input of the device benchmarks: 16 layers x 8 heads (MHA), d = 64, no prompt.
const Trace& whole_trace(int n) {
  static Trace tr;
  if (tr.n_tokens != n) {
    SynthOptions so;
    so.layers = 16;
    so.heads = 8;
    so.kv_heads = 8;
    so.tokens = n;
    so.head_dim = 64;
    so.prompt_len = 0;
    tr = synthesize(so);
  }
  return tr;
}

// One device on the whole trace at budget 20%; bytes per step from the work model.
void run_whole_trace(benchmark::State& st, ScorerDevice device) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = whole_trace(n);
  ScorerOptions o;
  o.device = device;
  o.threads = 0;  // the CPU twin on every core: the baseline of scorer/cuda
  o.run.budget = Budget::parse("0.2");
  double kernel_seconds = 0.0;
  for (auto _ : st) kernel_seconds += run_scorer(tr, o).kernel_seconds;
  if (device == ScorerDevice::Cuda)
    st.counters["kernel_ms"] = 1e3 * kernel_seconds / static_cast<double>(st.iterations());
  const int k = o.run.budget.resolve(n, 0, 0).total;
  const double units = 16.0 * 8.0;
  st.counters["bytes/step"] = scorer_bytes_per_step(k + 1, 64) * units;
  st.counters["GB/s"] = benchmark::Counter(scorer_bytes_per_step(k + 1, 64) * units * n * 1e-9,
                                           benchmark::Counter::kIsIterationInvariantRate);
  st.SetItemsProcessed(st.iterations() * static_cast<long>(units) * n);
}

// The CUDA scorer on the whole trace (skipped without a device).
void BM_ScorerCuda(benchmark::State& st) {
  std::string why;
  if (gpu::device_count(&why) == 0) {
    st.SkipWithError(("no CUDA device: " + why).c_str());
    return;
  }
  run_whole_trace(st, ScorerDevice::Cuda);
}

// The CPU twin on the same trace with all cores: scorer/cuda's baseline, measured in its run.
void BM_ScorerCpuWholeTrace(benchmark::State& st) { run_whole_trace(st, ScorerDevice::Cpu); }

}  // namespace

BENCHMARK(BM_ScorerCpu)
    ->Name("scorer/cpu")
    ->Args({256, 64})
    ->Args({1024, 64})
    ->Args({1024, 32})
    ->Args({1024, 128})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScorerBudget)
    ->Name("scorer/budget")
    ->ArgsProduct({{1024}, {64}, {5, 10, 20, 50}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScorerHeads)->Name("scorer/heads")->ArgsProduct({{1024}, {64}, {1, 3, 9}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScorerLogits)->Name("scorer/logits")->Arg(64)->Arg(208)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PeakMulAdd)->Name("machine/peak-mul-add")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadBandwidth)
    ->Name("machine/read-bandwidth")
    ->Arg(64)
    ->Arg(208)
    ->Arg(1024)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ScorerCpuWholeTrace)
    ->Name("scorer/cpu-all-cores")
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ScorerCuda)->Name("scorer/cuda")->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
