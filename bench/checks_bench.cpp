// The claim checks of `kvoracle verify` on one head of a synthetic trace (every per-head check,
// the eight default policies replayed; no budget sweep, no loss instances), against the floor of
// any exact check on that head: its dense causal attention, computed once (attention/dense).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>

#include "bench_inputs.hpp"
#include "kvo/core/attention.hpp"
#include "kvo/core/exp_fp64.hpp"
#include "kvo/core/unit_bytes.hpp"
#include "kvo/proofs_check/power_law.hpp"
#include "kvo/proofs_check/trace_checks.hpp"
#include "kvo/studies/hypothesis_search.hpp"
#include "kvo/studies/worst_case.hpp"

using namespace kvo;

namespace {

// One head's dense causal attention in fp64, the way a tuned implementation computes it: Q K^T by
// Eigen's GEMM on blocks of 256 query rows (never the n x n matrix), then each row's softmax.
void BM_DenseAttention(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), d = 64, B = 256;
  const Trace& tr = bench::trace(n, d);
  const Eigen::MatrixXd Q =
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(tr.q[0].data(), n, d)
          .cast<double>();
  const Eigen::MatrixXd K =
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(tr.k[0].data(), n, d)
          .cast<double>();
  Eigen::MatrixXd S;
  for (auto _ : st) {
    double sink = 0.0;
    for (int b = 0; b < n; b += B) {
      const int rows = std::min(B, n - b), cols = b + rows;
      S.noalias() = (Q.middleRows(b, rows) * K.topRows(cols).transpose()) * tr.attn_scale;
      for (int t = 0; t < rows; ++t) {
        auto row = S.row(t).head(b + t + 1);
        const double m = row.maxCoeff();
        double z = 0.0;
        for (int j = 0; j <= b + t; ++j) z += row(j) = exp_fp64(row(j) - m);
        row /= z;
        sink += row(b + t);
      }
    }
    benchmark::DoNotOptimize(sink);
  }
  st.SetItemsProcessed(st.iterations() * n);
}

// Every query's fp64 logits over its whole prefix and their softmax (prefix_attention on a plain
// view: keys read from the trace eight at a time), in the bits every check shares, where
// attention/dense is the fastest way to the same matrix.
void BM_PrefixPass(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const HeadView head(bench::trace(n, 64), 0, 0);
  std::vector<int> keys;
  std::vector<double> logits, probs;
  for (auto _ : st) {
    double sink = 0.0;
    for (int i = 0; i < n; ++i) {
      prefix_attention(head, i, keys, logits, probs);
      sink += probs.back();
    }
    benchmark::DoNotOptimize(sink);
  }
  st.SetItemsProcessed(st.iterations() * n);
}

// The same pass over key tiles, four queries at a time (HeadView::prefix_logits, what verify's head
// replay and the offline solver's passes run): each tile of keys is read once for the four.
void BM_PrefixPassBlocked(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const HeadView head = HeadView(bench::trace(n, 64), 0, 0).with_key_tiles();
  constexpr int kBlock = 4;
  std::vector<double> rows(static_cast<size_t>(kBlock) * n);
  std::vector<int> queries;
  for (auto _ : st) {
    double sink = 0.0;
    for (int i = 0; i < n; i += kBlock) {
      queries.clear();
      for (int x = i; x < std::min(n, i + kBlock); ++x) queries.push_back(x);
      head.prefix_logits(queries, rows.data(), static_cast<size_t>(n));
      for (size_t b = 0; b < queries.size(); ++b) {
        const std::span<double> r(rows.data() + b * static_cast<size_t>(n), static_cast<size_t>(queries[b]) + 1);
        softmax(r, r);
        sink += r.back();
      }
    }
    benchmark::DoNotOptimize(sink);
  }
  st.SetItemsProcessed(st.iterations() * n);
}

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

// Other papers' claims on one head (verify --claims adakv,snapkv,streamingllm,scissorhands,tova
// --policies h2o): the per-head pass with SNAP1, SINK1, SCIS1 and TOVA1 (two top-k selections per
// step), and Ada-KV's 32 queries of the layer. Its floor is attention/prefix-pass-blocked.
void BM_VerifyOtherPapers(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  const Trace& tr = bench::trace(n, 64);
  TraceChecksOptions o;
  o.run.budget = Budget(Amount::parse("0.2"));
  o.claims = parse_papers("adakv,snapkv,streamingllm,scissorhands,tova");
  o.policies = {PolicyId::H2O};
  o.threads = 1;
  for (auto _ : st) benchmark::DoNotOptimize(run_trace_checks(tr, o).report.records().size());
  st.SetItemsProcessed(st.iterations() * n);
}

// One evaluation of `search attention` (studies/worst_case.hpp): a random n-token instance (d = 64,
// norms <= 8) made a trace, h2o replayed at k = n/4 and OPT_dyn solved. Its floor is the
// instance's attention pass (attention/prefix-pass-blocked at the same n).
void BM_SearchEvaluation(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), d = 64;
  std::mt19937_64 g(1);
  std::normal_distribution<float> N(0.f, 1.f);
  std::vector<float> q(static_cast<size_t>(n) * d), k(q.size());
  for (auto* m : {&q, &k})
    for (float& x : *m) x = N(g);
  RunOptions run;
  run.budget = std::to_string(n / 4);
  const Trace t = studies::attention_instance(q, k, n, d);
  for (auto _ : st) benchmark::DoNotOptimize(studies::instance_ratios(t, PolicyId::H2O, run).opt_dyn);
  st.SetItemsProcessed(st.iterations());
}

// One evaluation of `search hypotheses` (studies/hypothesis_search.hpp): random causal logits in
// [-8, 8] made a trace, verify's C15 run for greedy on dense-acc (k = n/4, prompt n/2) and the
// hypotheses read from it.
void BM_HypothesisEvaluation(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  std::mt19937_64 g(1);
  std::uniform_real_distribution<double> U(-8.0, 8.0);
  std::vector<double> logits(static_cast<size_t>(n) * n);
  for (double& x : logits) x = U(g);
  RunOptions run = studies::HypothesisSearchRequest::default_run();
  run.budget = std::to_string(n / 4);
  run.prompt_len = n / 2;
  const Trace t = studies::logit_instance(logits, n);
  for (auto _ : st) benchmark::DoNotOptimize(studies::measure_hypotheses(t, PolicyId::Greedy, run).alpha);
  st.SetItemsProcessed(st.iterations());
}

// What E2 adds to a head of verify/head/n: the power-law fit of its n accumulated-attention values
// with verify's default 100 bootstrap samples (log-normal values here: the cost depends on n, the
// candidates and the bootstrap, not on the law).
void BM_PowerLawFit(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  std::mt19937_64 g(1);
  std::lognormal_distribution<double> law(0.0, 1.0);
  std::vector<double> x(static_cast<size_t>(n));
  for (auto& v : x) v = law(g);
  PowerLawOptions o;
  o.bootstrap = TraceChecksOptions{}.power_law_bootstrap;
  for (auto _ : st) benchmark::DoNotOptimize(fit_power_law(x, o).p_value);
  st.SetItemsProcessed(st.iterations() * n);
}

// What spreading verify over MPI ranks adds per unit: rank 0 receives each head's
// results as bytes (CBOR) and assembles the report from them; a rank encodes its results. Both per
// record, on one head's real unit of verify/head/n, next to that unit's compute (verify/head/n).
struct HeadUnit {
  TraceChecksOptions o;
  std::unique_ptr<TraceChecksPlan> plan;
  std::vector<std::string> results;
  long records = 0;
};
const HeadUnit& head_unit(int n) {
  static std::map<int, HeadUnit> cache;
  HeadUnit& u = cache[n];
  if (!u.plan) {
    u.o.run.budget = Budget(Amount::parse("0.2"));
    u.o.sweep.clear();
    u.o.loss_heads = 0;
    u.o.loss_random = 0;
    u.plan = std::make_unique<TraceChecksPlan>(bench::trace(n, 64), u.o);
    for (int x = 0; x < u.plan->size(); ++x) u.results.push_back(u.plan->run(x));
    u.records = static_cast<long>(u.plan->assemble(u.results).report.records().size());
  }
  return u;
}

void BM_UnitAssemble(benchmark::State& st) {
  const HeadUnit& u = head_unit(static_cast<int>(st.range(0)));
  for (auto _ : st) benchmark::DoNotOptimize(u.plan->assemble(u.results).report.records().size());
  st.SetItemsProcessed(st.iterations() * u.records);
  st.counters["bytes"] = static_cast<double>(u.results.front().size());
  st.counters["records"] = static_cast<double>(u.records);
}

void BM_UnitEncode(benchmark::State& st) {
  const HeadUnit& u = head_unit(static_cast<int>(st.range(0)));
  const nlohmann::json j = from_unit_bytes(u.results.front(), "the unit");
  for (auto _ : st) benchmark::DoNotOptimize(to_unit_bytes(j).size());
  st.SetItemsProcessed(st.iterations() * u.records);
}

// n = 256, then 1024 .. 8192 by doubling (the long-context scaling of docs/oracle.md).
void long_context_sizes(benchmark::internal::Benchmark* b) {
  b->Arg(256);
  for (int n = 1024; n <= 8192; n *= 2) b->Arg(n);
  b->Unit(benchmark::kMillisecond);
}

}  // namespace

// Up to 32 768: the floor of offline/streaming (oracle_bench) at every size it runs.
BENCHMARK(BM_DenseAttention)->Name("attention/dense")->Apply([](auto* b) {
  long_context_sizes(b);
  b->Arg(16384)->Arg(32768);
});
BENCHMARK(BM_PrefixPass)->Name("attention/prefix-pass")->Apply([](auto* b) {
  long_context_sizes(b);
  b->Arg(16384)->Arg(32768);
});
BENCHMARK(BM_PrefixPassBlocked)->Name("attention/prefix-pass-blocked")->Apply([](auto* b) {
  long_context_sizes(b);
  b->Arg(16384)->Arg(32768);
});
BENCHMARK(BM_VerifyHead)->Name("verify/head")->Apply(long_context_sizes);
BENCHMARK(BM_SearchEvaluation)->Name("search/attention-evaluation")->Arg(32)->Arg(64);
BENCHMARK(BM_HypothesisEvaluation)->Name("search/hypothesis-evaluation")->Arg(16)->Arg(32);
BENCHMARK(BM_VerifyOtherPapers)->Name("verify/other-papers")->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PowerLawFit)->Name("checks/power-law-fit")->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_UnitAssemble)->Name("gather/assemble")->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_UnitEncode)->Name("gather/encode")->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond);
