// Core hot paths: greedy optimisers on facility location (and its input layouts), marginal gains,
// replay per policy.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "bench_inputs.hpp"
#include "kvo/core/engine_contracts.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/replay_lockstep.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/core/trace_io.hpp"

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

// Facility location from the caller's n x n buffer in each memory layout, then lazy greedy
// (k = 50): column-major is read in place, row-major symmetric too (after a symmetry check),
// row-major asymmetric pays one cache-blocked transpose. Baseline: column-major.
enum class Layout { ColumnMajor, SymmetricRowMajor, RowMajor };
template <Layout L>
void BM_FlLayout(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  Eigen::MatrixXd s = bench::similarity(n, n, 5);
  if (L == Layout::SymmetricRowMajor) s = (s + s.transpose()).eval();  // row-major reading = s
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> row_major = s;
  GreedyOptions o;
  o.budget = 50;
  for (auto _ : st) {
    const auto r = L == Layout::ColumnMajor
                       ? lazy_greedy(FacilityLocation(s.data(), n, n), o)
                       : lazy_greedy(FacilityLocation(FacilityLocation::RowMajor{}, row_major.data(), n, n), o);
    benchmark::DoNotOptimize(r.value);
  }
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

// The replay benchmarks' options: budget 20% unless given, one thread, no per-step sets recorded.
ReplayOptions one_thread_replay(PolicyId policy, int percent = 20) {
  ReplayOptions o;
  o.run.policy.id = policy;
  o.run.budget = Budget::parse(std::to_string(percent) + "%");
  o.threads = 1;
  o.record_sets = false;
  return o;
}

// One layer of `heads` heads, n * heads head-steps per run.
void run_replay_bench(benchmark::State& st, PolicyId policy, int percent, int heads = 1,
                      BudgetScope scope = BudgetScope::Head) {
  const int n = static_cast<int>(st.range(0)), d = static_cast<int>(st.range(1));
  const Trace& tr = bench::trace(n, d, heads);
  ReplayOptions o = one_thread_replay(policy, percent);
  o.run.budget_scope = scope;
  for (auto _ : st) benchmark::DoNotOptimize(replay(tr, o).heads.size());
  st.SetItemsProcessed(st.iterations() * n * heads);  // head-steps
}

// Arguments: n tokens, head_dim d (budget 20%).
void BM_Replay(benchmark::State& st, PolicyId policy) { run_replay_bench(st, policy, 20); }

// Arguments: n, d, heads (h2o, budget 20%, one thread).
void BM_ReplayHeads(benchmark::State& st) { run_replay_bench(st, PolicyId::H2O, 20, static_cast<int>(st.range(2))); }

// Arguments: n, d, heads, scope (0: each head its own budget, the baseline; 1: the layer's heads
// share one, the victim chosen across them). h2o, budget 20%, one thread.
void BM_ReplayShared(benchmark::State& st) {
  run_replay_bench(st, PolicyId::H2O, 20, static_cast<int>(st.range(2)),
                   st.range(3) ? BudgetScope::Layer : BudgetScope::Head);
}

// Arguments: n, d, budget in percent of n (h2o; the baseline of scorer/budget).
void BM_ReplayBudget(benchmark::State& st) { run_replay_bench(st, PolicyId::H2O, static_cast<int>(st.range(2))); }

// Replay of one long head (h2o, budget 20%, d = 64, one thread, no per-step sets recorded: what
// `kvoracle replay` does without --out) with its memory: the peak resident growth over the
// process before the trace existed, per token and per token-dimension (O(n·d) means a constant).
void BM_ReplayLong(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), d = static_cast<int>(st.range(1));
  const std::uint64_t before = bench::rss_bytes();
  bench::reset_peak_rss();
  const Trace& tr = bench::trace(n, d);
  const ReplayOptions o = one_thread_replay(PolicyId::H2O);
  for (auto _ : st) benchmark::DoNotOptimize(replay(tr, o).heads.size());
  const double growth = static_cast<double>(bench::peak_rss_bytes()) - static_cast<double>(before);
  st.counters["peak_growth_MiB"] = growth / (1 << 20);
  st.counters["bytes/(n*d)"] = growth / (static_cast<double>(n) * d);
  st.SetItemsProcessed(st.iterations() * n);
}

// Reading a safetensors trace (fp32 q and k, 1 layer, `heads` heads, d = 64) from the page cache:
// header parsing, validation and the copy into the Trace. Arguments: n tokens, heads.
void BM_ReadTrace(benchmark::State& st) {
  SynthOptions o;
  o.layers = 1;
  o.heads = o.kv_heads = static_cast<int>(st.range(1));
  o.tokens = static_cast<int>(st.range(0));
  o.head_dim = 64;
  o.prompt_len = 0;
  const auto path =
      std::filesystem::temp_directory_path() / ("kvo-bench-trace-" + std::to_string(::getpid()) + ".safetensors");
  write_trace(path.string(), synthesize(o));
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  for (auto _ : st) benchmark::DoNotOptimize(read_trace(path.string()).n_tokens);
  std::filesystem::remove(path);
  st.SetBytesProcessed(st.iterations() * bytes);
}

// `oracle contract`'s policies under engines' contracts: the eight contract documents of
// bench/contract-study (SIZES=short) at k = 20%, h2o, tova and scissorhands under each (one
// first-come run under DMS's admission): 22 replays of a synthetic 4-layer trace (9 query heads in
// 3 KV groups, d = 64, no prompt), each replay() on its own (separate, the baseline) or all in one
// lockstep pass (replay_end_steps), on all cores. The lockstep end steps are checked against the
// separate replays' once per size.
std::vector<ReplayOptions> contract_study_replays(int n) {
  const char* documents[] = {
      R"({"engine": "kvoracle", "budget": 1})",
      R"({"engine": "tensorrt-llm", "eviction_mode": "union", "budget": 1, "beta": 64})",
      R"({"engine": "tensorrt-llm", "eviction_mode": "per_head", "budget": 1, "beta": 64})",
      R"({"engine": "tensorrt-llm", "eviction_mode": "per_layer_perhead", "budget": 1, "beta": 64})",
      R"({"engine": "openvino", "start_size": 16, "recent_size": 16, "max_cache_size": 48, "block_size": 16})",
      R"({"engine": "llama.cpp", "n_ctx": 20, "kv_evict_sink": 4, "kv_evict_window": 16})",
      R"({"engine": "dms", "window_size": 16, "budget": 16})",
      R"({"engine": "kvpress", "compression_interval": 64, "target_size": 1, "adakv": true})"};
  std::vector<ReplayOptions> out;
  for (const char* d : documents) {
    const EngineContract e = read_engine_contract(nlohmann::json::parse(d), n, 0, n / 5);
    for (PolicyId id : {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands}) {
      ReplayOptions o;
      o.run.policy.id = id;
      o.run.gqa = GqaMode::KvMean;
      o.contract = e.contract;
      o.record_sets = false;
      out.push_back(o);
      if (e.contract.admission_only) break;  // policy-blind
    }
  }
  return out;
}

const Trace& contract_trace(int n) {
  static std::map<int, Trace> traces;
  auto it = traces.find(n);
  if (it == traces.end()) {
    SynthOptions o;
    o.layers = 4;
    o.heads = 9;
    o.kv_heads = 3;
    o.tokens = n;
    o.head_dim = 64;
    o.prompt_len = 0;
    it = traces.emplace(n, synthesize(o)).first;
  }
  return it->second;
}

UnitEndSteps separate_end_steps(const Trace& tr, const std::vector<ReplayOptions>& options) {
  UnitEndSteps out;
  for (const ReplayOptions& o : options) out.push_back(end_steps_of(tr, replay(tr, o)));
  return out;
}

template <bool lockstep>
void BM_ContractReplays(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = contract_trace(n);
  const std::vector<ReplayOptions> options = contract_study_replays(n);
  static std::map<int, bool> checked;
  if (!checked[n]) {
    checked[n] = true;
    if (replay_end_steps(tr, options) != separate_end_steps(tr, options)) {
      st.SkipWithError("the lockstep pass departs from the separate replays");
      return;
    }
  }
  for (auto _ : st)
    benchmark::DoNotOptimize(lockstep ? replay_end_steps(tr, options).size() : separate_end_steps(tr, options).size());
  st.counters["replays"] = static_cast<double>(options.size());
  st.SetItemsProcessed(st.iterations() * static_cast<long>(options.size()) * n);  // replay-steps
}

}  // namespace

BENCHMARK(BM_ContractReplays<false>)
    ->Name("contract/replays-separate")
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ContractReplays<true>)
    ->Name("contract/replays-lockstep")
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayLong)
    ->Name("replay/h2o-long")
    ->Args({8192, 64})
    ->Args({16384, 64})
    ->Args({32768, 64})
    ->Iterations(1)
    ->Repetitions(1)
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_ReadTrace)
    ->Name("io/read-trace")
    ->Args({1024, 8})
    ->Args({4096, 8})
    ->Args({1024, 32})
    ->Unit(benchmark::kMillisecond);
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
BENCHMARK(BM_FlLayout<Layout::ColumnMajor>)->Name("fl-layout/column-major")->Arg(3000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlLayout<Layout::SymmetricRowMajor>)
    ->Name("fl-layout/symmetric-row-major")
    ->Arg(3000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlLayout<Layout::RowMajor>)->Name("fl-layout/row-major")->Arg(3000)->Unit(benchmark::kMillisecond);
namespace {

// n in {256, 1024} at d = 64 for every policy; d in {32, 128} at n = 1024 for the baseline and h2o.
void ReplayArgs(benchmark::internal::Benchmark* b) {
  b->Args({256, 64})->Args({1024, 64})->Unit(benchmark::kMillisecond);
}
void ReplayArgsWithD(benchmark::internal::Benchmark* b) {
  ReplayArgs(b);
  b->Args({1024, 32})->Args({1024, 128});
}

// "replay/<policy><suffix>": the names bench/write_doc.py reads, spelled by the policy registry.
std::string replay_name(PolicyId id, std::string_view suffix = "") {
  return "replay/" + policy_name(id) + std::string(suffix);
}

}  // namespace

BENCHMARK_CAPTURE(BM_Replay, full, PolicyId::Full)->Name(replay_name(PolicyId::Full))->Apply(ReplayArgsWithD);
BENCHMARK_CAPTURE(BM_Replay, h2o, PolicyId::H2O)->Name(replay_name(PolicyId::H2O))->Apply(ReplayArgsWithD);
BENCHMARK(BM_ReplayHeads)
    ->Name(replay_name(PolicyId::H2O, "-heads"))
    ->ArgsProduct({{1024}, {64}, {1, 3, 9}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayShared)
    ->Name(replay_name(PolicyId::H2O, "-shared"))
    ->ArgsProduct({{1024}, {64}, {9}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayBudget)
    ->Name(replay_name(PolicyId::H2O, "-budget"))
    ->ArgsProduct({{1024}, {64}, {5, 10, 20, 50}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay, h2o_mask, PolicyId::H2OMask)->Name(replay_name(PolicyId::H2OMask))->Apply(ReplayArgs);
BENCHMARK_CAPTURE(BM_Replay, h2o_paper, PolicyId::H2OPaper)->Name(replay_name(PolicyId::H2OPaper))->Apply(ReplayArgs);
BENCHMARK_CAPTURE(BM_Replay, tova, PolicyId::Tova)->Name(replay_name(PolicyId::Tova))->Apply(ReplayArgs);
BENCHMARK_CAPTURE(BM_Replay, window, PolicyId::Window)->Name(replay_name(PolicyId::Window))->Apply(ReplayArgs);
// The paper's ablation policies: the patterns with heavy hitters pick their exempt top per eviction;
// lookahead reads the dense n x n attention (column sums) once per head.
BENCHMARK_CAPTURE(BM_Replay, strided, PolicyId::Strided)->Name(replay_name(PolicyId::Strided))->Apply(ReplayArgs);
BENCHMARK_CAPTURE(BM_Replay, strided_h2o, PolicyId::StridedH2O)
    ->Name(replay_name(PolicyId::StridedH2O))
    ->Apply(ReplayArgs);
BENCHMARK_CAPTURE(BM_Replay, fixed_h2o, PolicyId::FixedH2O)->Name(replay_name(PolicyId::FixedH2O))->Apply(ReplayArgs);
BENCHMARK_CAPTURE(BM_Replay, lookahead, PolicyId::Lookahead)->Name(replay_name(PolicyId::Lookahead))->Apply(ReplayArgs);
