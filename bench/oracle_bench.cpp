// Exact oracles: branch and bound on facility location (target: n = 80, k = 10 under 1 s), brute
// force, top-k, the offline optimum, and the prefill optimum with kvpress's presses (docs/presses.md;
// compare with attention/dense of checks_bench on the same trace).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_inputs.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/modular_concave.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/budget_allocation.hpp"
#include "kvo/oracle/contract_optimum.hpp"
#include "kvo/oracle/offline_pages.hpp"
#include "kvo/oracle/offline_periodic.hpp"
#include "kvo/oracle/offline_shared.hpp"
#include "kvo/oracle/prefill_oracle.hpp"
#include "kvo/oracle/shared_decoding.hpp"
#include "kvo/oracle/shared_prefill.hpp"
#include "kvo/oracle/static_oracle.hpp"
#include "kvo/oracle/weight_rows.hpp"

using namespace kvo;

namespace {

void BM_BranchAndBound(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), k = static_cast<int>(st.range(1));
  const FacilityLocation f(bench::similarity(16, n, 3));
  long long nodes = 0;
  bool exact = true;
  for (auto _ : st) {
    const auto s = solve_branch_and_bound(f, k);
    nodes = s.nodes;
    exact = exact && s.exact;
    benchmark::DoNotOptimize(s.value);
  }
  st.counters["nodes"] = static_cast<double>(nodes);
  st.counters["exact"] = exact ? 1 : 0;
}

void BM_BruteForce(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), k = static_cast<int>(st.range(1));
  const FacilityLocation f(bench::similarity(16, n, 4));
  for (auto _ : st) benchmark::DoNotOptimize(solve_brute_force(f, k).value);
}

void BM_TopK(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  std::mt19937_64 g(5);
  std::exponential_distribution<double> E(1.0);
  std::vector<double> w(static_cast<size_t>(n));
  for (auto& x : w) x = E(g);
  const ModularConcave f(w, Concave::Log);
  for (auto _ : st) benchmark::DoNotOptimize(solve_topk(f, n / 5).value);
}

}  // namespace

BENCHMARK(BM_BranchAndBound)
    ->Name("static/branch-and-bound-fl")
    ->Args({40, 8})
    ->Args({80, 10})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BruteForce)->Name("static/brute-force-fl")->Args({20, 5})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopK)->Name("static/topk")->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);

// The offline (nested) oracle on one head's dense attention, k = 20% of n: the assignment solver
// (dense w), column generation from rows recomputed out of q and k, the time-node flow solver and
// Boost Graph's min-cost flow on the chain network.
#include "kvo/core/attention.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_streaming.hpp"

namespace {

const OfflineProblem& offline_problem(int n) {
  static std::map<int, OfflineProblem> cache;
  auto it = cache.find(n);
  if (it == cache.end()) {
    OfflineProblem p;
    p.w = dense_attention(HeadView(bench::trace(n, 64), 0, 0));
    p.budget = n / 5;
    it = cache.emplace(n, std::move(p)).first;
  }
  return it->second;
}

template <OfflineSolution (*Solve)(const OfflineProblem&)>
void BM_Offline(benchmark::State& st) {
  const OfflineProblem& p = offline_problem(static_cast<int>(st.range(0)));
  double value = 0;
  for (auto _ : st) value = Solve(p).value;
  st.counters["value"] = value;
}

// n = 256 .. 8192 by doubling for the default; the flow solvers (its baselines) stop earlier.
void offline_sizes(benchmark::internal::Benchmark* b, int largest) {
  for (int n = 256; n <= largest; n *= 2) b->Arg(n);
  b->Unit(benchmark::kMillisecond);
}

// The trace KVO_BENCH_REAL_TRACE names, read once, when it holds n tokens (and kv_heads KV heads per
// layer, unless 0); otherwise the benchmark is skipped with the reason and this returns null.
const Trace* real_trace(benchmark::State& st, int n, int kv_heads) {
  const char* path = std::getenv("KVO_BENCH_REAL_TRACE");
  if (path == nullptr || *path == '\0') {
    st.SkipWithError("set KVO_BENCH_REAL_TRACE to a real trace of n tokens (bench/long-context records one)");
    return nullptr;
  }
  static std::map<std::string, Trace> traces;
  auto it = traces.find(path);
  if (it == traces.end()) it = traces.emplace(path, read_trace(path)).first;
  if (it->second.n_tokens != n || (kv_heads > 0 && it->second.n_kv_heads != kv_heads)) {
    st.SkipWithError(kv_heads > 0 ? "KVO_BENCH_REAL_TRACE must hold n tokens and 3 KV heads per layer"
                                  : "KVO_BENCH_REAL_TRACE must hold n tokens");
    return nullptr;
  }
  return &it->second;
}

// Column generation on one head at k = n / 5, with its counters.
void offline_streaming(benchmark::State& st, const HeadView& head, const StreamingOfflineOptions& o, int budget = 0) {
  const int n = head.n();
  if (budget <= 0) budget = n / 5;
  OfflineSolution s;
  bench::reset_peak_rss();
  const auto before = bench::rss_bytes();
  for (auto _ : st) s = solve_offline_streaming(AttentionWeightRows(head), budget, 0, o);
  st.counters["value"] = s.value;
  st.counters["rounds"] = s.rounds;
  st.counters["passes"] = s.passes;
  st.counters["pairs_per_step"] = static_cast<double>(s.pairs) / std::max(1, n - budget);
  st.counters["table_stride"] = s.table_stride;
  st.counters["table_MiB"] = static_cast<double>(s.table_bytes) / 1048576.0;
  st.counters["extra_MiB"] =
      static_cast<double>(bench::peak_rss_bytes() - std::min(before, bench::peak_rss_bytes())) / 1048576.0;
}

// Column generation from rows recomputed out of q and k (attention included, no n x n matrix),
// pricing on the float cost table (docs/oracle.md §3d) or, with Table = false, on the rows; with
// Prune = false every listed pair stays listed (keep = 0); with Seed = false the lists start from
// the cheapest pairs alone (schedule_seed = false).
template <bool Table, bool Prune = true, bool Seed = true>
void BM_OfflineStreaming(benchmark::State& st) {
  StreamingOfflineOptions o;
  o.threads = st.range(1) > 0 ? static_cast<int>(st.range(1)) : 1;
  if (!Table) o.table_bytes = 0;
  if (!Prune) o.keep = 0;
  o.schedule_seed = Seed;
  offline_streaming(st, HeadView(bench::trace(static_cast<int>(st.range(0)), 64), 0, 0), o);
}

// The same on a real head, layer range(1) head range(2) of KVO_BENCH_REAL_TRACE (n tokens; skipped
// without it): real attention is sparse, with many near-equal small costs, which synthetic heads lack.
template <bool Seed>
void BM_OfflineStreamingReal(benchmark::State& st) {
  const Trace* trace = real_trace(st, static_cast<int>(st.range(0)), 0);
  if (trace == nullptr) return;
  StreamingOfflineOptions o;
  o.schedule_seed = Seed;
  offline_streaming(st, HeadView(*trace, static_cast<int>(st.range(1)), static_cast<int>(st.range(2))), o);
}

// Column generation with the cost table on every range(1)-th step only (table_stride): the memory
// of the table falls by that factor, and its rows bound the costs of the steps between them.
void BM_OfflineStreamingStride(benchmark::State& st) {
  StreamingOfflineOptions o;
  o.table_stride = static_cast<int>(st.range(1));
  offline_streaming(st, HeadView(bench::trace(static_cast<int>(st.range(0)), 64), 0, 0), o);
}

// Small budgets, k = n range(1) / 1000: the default options (the table capped at 48 bytes per token
// and slot, so every few steps' row below k = n / 20), or with PerSlot = false the whole table.
template <bool PerSlot>
void BM_OfflineStreamingBudget(benchmark::State& st) {
  StreamingOfflineOptions o;
  if (!PerSlot) o.table_bytes_per_slot = 0.0;
  const int n = static_cast<int>(st.range(0));
  offline_streaming(st, HeadView(bench::trace(n, 64), 0, 0), o, static_cast<int>(n * st.range(1) / 1000));
}

}  // namespace

BENCHMARK(BM_OfflineStreamingStride)
    ->Name("offline/streaming-stride")
    ->ArgsProduct({{8192}, {1, 2, 4, 8, 16}})
    ->Unit(benchmark::kMillisecond);
// k = 1 %, 2 % and 5 % of n; at 32 768 (one to two minutes each) a single repetition.
BENCHMARK(BM_OfflineStreamingBudget<true>)
    ->Name("offline/streaming-budget")
    ->ArgsProduct({{8192}, {10, 20, 50}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OfflineStreamingBudget<false>)
    ->Name("offline/streaming-budget-whole-table")
    ->ArgsProduct({{8192}, {10, 20, 50}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OfflineStreamingBudget<true>)
    ->Name("offline/streaming-budget")
    ->ArgsProduct({{32768}, {10, 20, 50}})
    ->Repetitions(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OfflineStreamingBudget<false>)
    ->Name("offline/streaming-budget-whole-table")
    ->ArgsProduct({{32768}, {10, 20, 50}})
    ->Repetitions(1)
    ->Unit(benchmark::kMillisecond);
// One thread, n = 256 .. 32 768 (the baseline: attention/dense/n of checks_bench, the same head).
BENCHMARK(BM_OfflineStreaming<true>)
    ->Name("offline/streaming")
    ->Apply([](auto* b) {
      for (int n = 256; n <= 32768; n *= 2) b->Args({n});
    }) -> Unit(benchmark::kMillisecond);
BENCHMARK(BM_OfflineStreaming<true, false>)
    ->Name("offline/streaming-keep-all")
    ->Apply([](auto* b) {
      for (int n = 1024; n <= 32768; n *= 2) b->Args({n});
    }) -> Unit(benchmark::kMillisecond);
BENCHMARK(BM_OfflineStreaming<true, true, false>)
    ->Name("offline/streaming-cheapest-seed")
    ->Apply([](auto* b) {
      for (int n = 1024; n <= 32768; n *= 2) b->Args({n});
    }) -> Unit(benchmark::kMillisecond);
// Three heads of the 8 192-token SmolLM2 trace of bench/long-context: layers 0, 15 and 29.
static void three_real_heads(benchmark::internal::Benchmark* b) {
  for (const auto& [layer, head] : {std::pair{0, 0}, std::pair{15, 4}, std::pair{29, 8}}) b->Args({8192, layer, head});
  b->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_OfflineStreamingReal<true>)->Name("offline/streaming-real")->Apply(three_real_heads);
BENCHMARK(BM_OfflineStreamingReal<false>)->Name("offline/streaming-real-cheapest-seed")->Apply(three_real_heads);
BENCHMARK(BM_OfflineStreaming<false>)
    ->Name("offline/streaming-rows")
    ->Apply([](auto* b) {
      for (int n = 1024; n <= 8192; n *= 2) b->Args({n});
    }) -> Unit(benchmark::kMillisecond);
BENCHMARK(BM_OfflineStreaming<true>)
    ->Name("offline/streaming-2threads")
    ->ArgsProduct({{2048, 8192}, {2}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Offline<solve_offline>)->Name("offline/assignment")->Apply([](auto* b) { offline_sizes(b, 8192); });
BENCHMARK(BM_Offline<solve_offline_ssp>)->Name("offline/ssp")->Apply([](auto* b) { offline_sizes(b, 2048); });
BENCHMARK(BM_Offline<solve_offline_bgl>)->Name("offline/bgl")->Apply([](auto* b) { offline_sizes(b, 512); });

namespace {

// The prefill optimum of one head: prompt n/2, the n/2 queries after it, k = 10% of the prompt.
void BM_PrefillOptimum(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = bench::trace(n, 64);
  for (auto _ : st) benchmark::DoNotOptimize(solve_prefill(prefill_unit(tr, 0, 0, n / 2), n / 20).value);
}

// Output fidelity of one KV head: E of `sets` kept sets of k = 10% of the prompt (prompt n/2), as
// oracle --prefill measures every press's set and both references in one pass.
void BM_PrefillOutput(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), P = n / 2, sets = static_cast<int>(st.range(1));
  const Trace& tr = bench::trace(n, 64);
  std::vector<std::vector<int>> kept(static_cast<size_t>(sets));
  for (int s = 0; s < sets; ++s)
    for (int j = s; j < P; j += 10) kept[static_cast<size_t>(s)].push_back(j);
  for (auto _ : st) benchmark::DoNotOptimize(output_errors(tr, 0, 0, P, kept).front());
}

// One press on one head's prompt of n tokens at compression ratio 0.8.
void BM_Press(benchmark::State& st, PressId id) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = bench::trace(n, 64);
  PressOptions o;
  o.id = id;
  o.compression_ratio = 0.8;
  for (auto _ : st) benchmark::DoNotOptimize(run_press(press_layer_of(tr, 0, n), o).n_kept);
}

const bool kPressBenches = [] {
  for (const PressEntry& e : press_table())
    benchmark::RegisterBenchmark(("press/" + std::string(e.name)).c_str(), BM_Press, e.id)
        ->Arg(1024)
        ->Arg(4096)
        ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace

namespace {

// One budget over 90 units (SmolLM2's 30 layers x 3 KV heads) of P sorted prompt weights at 10%
// kept: the global allocation (allocation/model) against per-head budgets on the same gains
// (allocation/per-head: every unit's floor at k, the baseline). The weights are exponential draws.
void BM_Allocation(benchmark::State& st, bool per_head) {
  const int P = static_cast<int>(st.range(0)), k = P / 10, units = 90;
  std::mt19937_64 rng(1);
  std::exponential_distribution<double> draw(1.0);
  std::vector<AllocationGroup> groups(units);
  for (AllocationGroup& g : groups) {
    for (int j = 0; j < P; ++j) g.gains.push_back(draw(rng));
    std::sort(g.gains.rbegin(), g.gains.rend());
    g.floor = per_head ? k : 0;
  }
  for (auto _ : st) benchmark::DoNotOptimize(allocate_budget(groups, static_cast<long>(units) * k).value);
  st.SetItemsProcessed(st.iterations() * units * P);  // prompt keys weighed
}

// Decoding with shared capacity: one layer of 3 KV heads (SmolLM2's) of a synthetic heavy-hitter
// trace at k = 20%, the exact offline optimum of the layer's shared pool (allocation/decoding-layer)
// against the per-head solver on the same heads (allocation/decoding-per-head, the baseline).
void decoding_allocation(benchmark::State& st, const Trace& tr, int n, bool per_head) {
  std::vector<OfflineProblem> units;
  for (int h = 0; h < 3; ++h) units.push_back(decoding_unit(tr, 0, h, n / 5, 0));
  for (auto _ : st) {
    if (per_head)
      for (const OfflineProblem& p : units) benchmark::DoNotOptimize(solve_offline(p).value);
    else
      benchmark::DoNotOptimize(solve_offline_shared(units).value);
  }
  st.SetItemsProcessed(st.iterations() * 3 * n);  // head-steps
}

// The same by column generation over attention rows recomputed from q and k (`--solver
// column-generation`, no n x n matrix): the layer's shared optimum (allocation/decoding-cg-layer)
// against the per-head column generation on the same heads (allocation/decoding-cg-per-head).
void decoding_allocation_streaming(benchmark::State& st, const Trace& tr, int n, bool per_head) {
  std::vector<GroupMeanWeightRows> rows;
  for (int h = 0; h < 3; ++h) {
    std::vector<HeadView> group;
    for (int q = h * tr.group_size(); q < (h + 1) * tr.group_size(); ++q) group.emplace_back(tr, 0, q);
    rows.emplace_back(std::move(group));
  }
  const std::vector<const WeightRows*> sources{&rows[0], &rows[1], &rows[2]};
  for (auto _ : st) {
    if (per_head)
      for (const WeightRows* w : sources) benchmark::DoNotOptimize(solve_offline_streaming(*w, n / 5, 0).value);
    else
      benchmark::DoNotOptimize(solve_offline_shared_streaming(sources, n / 5, 0).value);
  }
  st.SetItemsProcessed(st.iterations() * 3 * n);  // head-steps
}

void BM_DecodingAllocationStreaming(benchmark::State& st, bool per_head) {
  const int n = static_cast<int>(st.range(0));
  decoding_allocation_streaming(st, bench::trace(n, 64, 3), n, per_head);
}

void BM_DecodingAllocation(benchmark::State& st, bool per_head) {
  const int n = static_cast<int>(st.range(0));
  decoding_allocation(st, bench::trace(n, 64, 3), n, per_head);
}

// The same on layer 0 of a real trace of SmolLM2 (3 KV heads), dense or by column generation: the
// file KVO_BENCH_REAL_TRACE names, of n tokens (bench/long-context records one of 8 192); skipped
// without it.
void BM_DecodingAllocationReal(benchmark::State& st, bool per_head, bool streaming) {
  const int n = static_cast<int>(st.range(0));
  const Trace* trace = real_trace(st, n, 3);
  if (trace == nullptr) return;
  if (streaming)
    decoding_allocation_streaming(st, *trace, n, per_head);
  else
    decoding_allocation(st, *trace, n, per_head);
}

// Periodic compression (kvpress's DecodingPress schedule) on the same three heads: each head's exact
// optimum when its cache is compressed to k = 20% every 64 steps (allocation/periodic), against
// eviction at every step at the same k (allocation/decoding-per-head, the baseline).
void BM_PeriodicCompression(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = bench::trace(n, 64, 3);
  std::vector<OfflineProblem> units;
  for (int h = 0; h < 3; ++h) units.push_back(decoding_unit(tr, 0, h, n / 5, 0));
  for (auto _ : st)
    for (const OfflineProblem& p : units)
      benchmark::DoNotOptimize(solve_offline_periodic(std::span(&p, 1), {0, 64}).value);
  st.SetItemsProcessed(st.iterations() * 3 * n);  // head-steps
}

// Engines' contracts on the same three heads at k = 20% (oracle/contract_optimum.hpp): one kept set
// for the three (contract/tied: their rewards summed, one solve), and an admission-only cache for
// each (contract/admission: a top-k of each token's mass after its window), against each head's own
// set at every step (allocation/decoding-per-head, the baseline).
template <bool admission>
void BM_Contract(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = bench::trace(n, 64, 3);
  std::vector<Eigen::MatrixXd> w;
  for (int h = 0; h < 3; ++h) w.push_back(decoding_unit(tr, 0, h, n / 5, 0).w);
  EvictionContract c;
  c.kept_sets = admission ? KeptSets::Head : KeptSets::Layer;
  c.admission_only = admission;
  c.budget = n / 5;
  c.recent = admission ? 16 : 0;
  for (auto _ : st) benchmark::DoNotOptimize(solve_contract([&](size_t u) { return w[u]; }, n, 1, 3, c).value);
  st.SetItemsProcessed(st.iterations() * 3 * n);  // head-steps
}

// Pages in decoding on the same three heads: the layer's shared optimum over whole pages of 16 at
// k = 20% (allocation/decoding-pages: folding the token weights into pages, then the shared solve
// on ceil(n / 16) page steps), against the same layer in tokens (allocation/decoding-layer).
void BM_DecodingPages(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = bench::trace(n, 64, 3);
  std::vector<OfflineProblem> units;
  for (int h = 0; h < 3; ++h) units.push_back(decoding_unit(tr, 0, h, n / 5, 0));
  const PageShape shape = page_shape(n / 5, 0, 16);
  for (auto _ : st) {
    std::vector<OfflineProblem> pages;
    for (const OfflineProblem& p : units) pages.push_back(fold_into_pages(p, shape));
    benchmark::DoNotOptimize(solve_offline_shared(pages).value);
  }
  st.SetItemsProcessed(st.iterations() * 3 * n);  // head-steps
}

// kvpress's allocating presses on a prompt of P tokens of a 3-head layer at 20% kept:
// `oracle allocation --presses snapkv --alpha-safeguard 0.2` (allocation/presses: the press scored,
// AdaKV's kept sets, both measured against the optima at their counts and in their scope) against
// the scopes' optima alone (allocation/scopes, the baseline: the prefill weights and every scope);
// allocation/presses-per-layer adds SnapKV under PerLayerCompressionPress (--layer-ratios 0.8).
enum class PressRows { None, AdaKV, AdaKVAndPerLayer };
void BM_AllocationPresses(benchmark::State& st, PressRows rows) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = bench::trace(n, 64, 3);
  AllocationRequest req;
  req.prompt_len = n * 3 / 4;
  req.ratios = {0.8};
  if (rows != PressRows::None) {
    req.presses = "snapkv";
    req.alpha_safeguard = {0.2};
  }
  if (rows == PressRows::AdaKVAndPerLayer) req.layer_ratios = {0.8};
  for (auto _ : st) benchmark::DoNotOptimize(run_shared_prefill(tr, req).rows.size());
  st.SetItemsProcessed(st.iterations() * 3 * n);  // head-tokens
}

}  // namespace

BENCHMARK_CAPTURE(BM_AllocationPresses, scopes, PressRows::None)
    ->Name("allocation/scopes")
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AllocationPresses, presses, PressRows::AdaKV)
    ->Name("allocation/presses")
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AllocationPresses, presses_per_layer, PressRows::AdaKVAndPerLayer)
    ->Name("allocation/presses-per-layer")
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PeriodicCompression)->Name("allocation/periodic")->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodingAllocation, per_head, true)
    ->Name("allocation/decoding-per-head")
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(8192)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodingAllocation, layer, false)
    ->Name("allocation/decoding-layer")
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(8192)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodingAllocationStreaming, per_head, true)
    ->Name("allocation/decoding-cg-per-head")
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(8192)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodingAllocationStreaming, layer, false)
    ->Name("allocation/decoding-cg-layer")
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(8192)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Contract<false>)->Name("contract/tied")->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Contract<true>)->Name("contract/admission")->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodingPages)
    ->Name("allocation/decoding-pages")
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(8192)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodingAllocationReal, per_head, true, false)
    ->Name("allocation/decoding-real-per-head")
    ->Arg(8192)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodingAllocationReal, layer, false, false)
    ->Name("allocation/decoding-real-layer")
    ->Arg(8192)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodingAllocationReal, cg_per_head, true, true)
    ->Name("allocation/decoding-cg-real-per-head")
    ->Arg(8192)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DecodingAllocationReal, cg_layer, false, true)
    ->Name("allocation/decoding-cg-real-layer")
    ->Arg(8192)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Allocation, per_head, true)
    ->Name("allocation/per-head")
    ->Arg(1024)
    ->Arg(8192)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Allocation, model, false)
    ->Name("allocation/model")
    ->Arg(1024)
    ->Arg(8192)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrefillOptimum)->Name("prefill/optimum")->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrefillOutput)
    ->Name("prefill/output")
    ->ArgsProduct({{1024, 4096}, {1, 10}})
    ->Unit(benchmark::kMillisecond);
