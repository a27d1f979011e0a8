// The claim checks of `kvoracle verify` on one head of a synthetic trace (every per-head check,
// the eight default policies replayed; no budget sweep, no loss instances), against the floor of
// any exact check on that head: its dense causal attention, computed once (attention/dense).
#include <benchmark/benchmark.h>

#include <cmath>

#include "bench_inputs.hpp"
#include "kvo/checks/trace_checks.hpp"
#include "kvo/core/exp_fp64.hpp"

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

// n = 256, then 1024 .. 8192 by doubling (the long-context scaling of issue 17).
void long_context_sizes(benchmark::internal::Benchmark* b) {
  b->Arg(256);
  for (int n = 1024; n <= 8192; n *= 2) b->Arg(n);
  b->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_DenseAttention)->Name("attention/dense")->Apply(long_context_sizes);
BENCHMARK(BM_VerifyHead)->Name("verify/head")->Apply(long_context_sizes);
