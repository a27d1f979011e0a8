// The real model on 2 cores: prefill of 1024 tokens (target >= 200 tokens/s), with and without
// the logits of every position, and one decode step with a full cache.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "kvo/model/llama.hpp"
#include "kvo/model/model_path.hpp"

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

}  // namespace

BENCHMARK(BM_Prefill)
    ->Name("model/prefill")
    ->Args({1024, 0})
    ->Args({1024, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_DecodeStep)->Name("model/decode-step")->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
