// The claim checks of `kvoracle verify` on one head of a synthetic trace (every per-head check,
// the eight default policies replayed; no budget sweep, no loss instances), against the replay of
// the full cache on the same trace (replay/full, the report's baseline).
#include <benchmark/benchmark.h>

#include "bench_inputs.hpp"
#include "kvo/checks/trace_checks.hpp"

using namespace kvo;

namespace {

void BM_VerifyHead(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = bench::trace(n, 64);
  TraceChecksOptions o;
  o.run.budget = Budget(Amount::parse("0.2"));
  o.sweep.clear();
  o.loss_heads = 0;
  o.loss_random = 0;
  o.threads = 1;
  for (auto _ : st) benchmark::DoNotOptimize(run_trace_checks(tr, o).report.records().size());
  st.SetItemsProcessed(st.iterations() * n);
}

}  // namespace

BENCHMARK(BM_VerifyHead)->Name("verify/head")->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);
