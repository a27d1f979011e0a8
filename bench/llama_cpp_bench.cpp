// kvoracle inside llama.cpp (docs/llama.md), on SmolLM2's GGUF: decoding N tokens one at a time
// with llama.cpp's full cache (the baseline) and with kvoracle's manager evicting to 20 % under the
// whole-model contract (4 sinks, 16 recent), 1 thread. Compiled where engines/llama-cpp is built.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>

#include "kvo/llama_cpp/evicting_context.hpp"
#include "kvo/model/model_path.hpp"
#include "llama.h"

using namespace kvo;

namespace {

llama_model* llama_smollm2() {
  static const std::unique_ptr<llama_model, void (*)(llama_model*)> m = [] {
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    llama_backend_init();
    const std::string path = model::default_model_path();
    return std::unique_ptr<llama_model, void (*)(llama_model*)>(
        std::filesystem::exists(path) ? llama_model_load_from_file(path.c_str(), llama_model_default_params())
                                      : nullptr,
        llama_model_free);
  }();
  return m.get();
}

// A fixed input that needs no tokenizer: ids spread over the vocabulary's ordinary range.
std::vector<int> tokens(int n) {
  std::vector<int> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = 1000 + (i * 7919) % 40000;
  return ids;
}

void BM_LlamaCppDecode(benchmark::State& st) {
  llama_model* model = llama_smollm2();
  if (model == nullptr) return st.SkipWithError("model missing: run scripts/fetch-model");
  const int n = static_cast<int>(st.range(0));
  const bool evict = st.range(1) != 0;
  const auto ids = tokens(n);
  llama_cpp::EvictingContextOptions o;
  o.contract.kept_sets = KeptSets::Model;
  o.contract.budget = n / 5;
  o.contract.sinks = 4;
  o.contract.recent = 16;
  o.max_len = n;
  for (auto _ : st) {
    if (evict) {
      llama_cpp::EvictingContext ctx(model, o);
      for (int t : ids) benchmark::DoNotOptimize(ctx.decode(t));
    } else {  // the same settings, every position held
      llama_context* ctx = llama_init_from_model(model, llama_cpp::context_params(o, n));
      for (int t : ids) {
        llama_token tok = t;
        benchmark::DoNotOptimize(llama_decode(ctx, llama_batch_get_one(&tok, 1)));
      }
      llama_free(ctx);
    }
  }
  st.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

// llama/decode/N/0: the full cache; llama/decode/N/1: evicting to 20 %.
BENCHMARK(BM_LlamaCppDecode)
    ->Name("llama/decode")
    ->ArgsProduct({{512, 2048}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
