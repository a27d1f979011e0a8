// kvoracle-llama: kvoracle's eviction manager inside llama.cpp on a GGUF model (docs/llama.md).
// Decodes the first N tokens of a text (cycled when shorter) with llama.cpp's full cache and
// evicting under the whole-model kept set, and prints the speeds and llama.cpp's state sizes;
// with --compare, every eviction decision against kvoracle's own decoder under the same contract.
// The contract: h2o's score over the whole model with sinks and a window, or any engine's
// contract document (--contract, docs/engines.md) whose kept set is the model's.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/engine_contracts.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/text_file.hpp"
#include "kvo/llama_cpp/llama_study.hpp"
#include "kvo/model/model_path.hpp"
#include "llama.h"

namespace {

std::vector<int> text_tokens(const kvo::model::Llama& m, const std::string& path, int n) {
  const std::vector<int> ids = m.tokenizer().encode(kvo::read_text_file(path, "kvoracle-llama: text"));
  kvo::require(!ids.empty(), "kvoracle-llama: the text " + path + " has no tokens");
  if (ids.size() < static_cast<size_t>(n))
    std::cerr << "kvoracle-llama: " << path << " has " << ids.size() << " tokens, cycled to " << n << "\n";
  std::vector<int> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i) out[i] = ids[i % ids.size()];
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvoracle's eviction manager inside llama.cpp: speed, memory and decisions (docs/llama.md)"};
  std::string model_path = kvo::model::default_model_path(), text = "/usr/share/common-licenses/GPL-3";
  std::string policy = "h2o", contract;
  int n = 8192, budget = 0, sinks = 4, recent = 16, threads = 1, reps = 1, sequences = 1, prompt_len = 0, chunk = 0;
  int batch = 256;
  std::optional<double> tolerance;
  bool compare = false, flash_attn = false, f16 = false;
  app.add_option("--model", model_path, "the GGUF file (default: SmolLM2 of scripts/fetch-model)");
  app.add_option("--text", text, "the text decoded, tokenized by kvoracle (cycled to N tokens)");
  app.add_option("-n,--tokens", n, "positions decoded")->check(CLI::PositiveNumber);
  app.add_option("--budget", budget, "positions the cache holds (default: 20% of N)")->check(CLI::NonNegativeNumber);
  app.add_option("--sinks", sinks, "the first positions never evicted")->check(CLI::NonNegativeNumber);
  app.add_option("--recent", recent, "the newest positions never evicted")->check(CLI::NonNegativeNumber);
  app.add_option("--contract", contract,
                 "an engine's contract document (JSON text or a file, docs/engines.md) instead of "
                 "--sinks/--recent/--chunk; --budget, when given, replaces its k");
  app.add_option("--prompt-len", prompt_len, "a prompt of P tokens, fed in batches (prefill)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--chunk", chunk, "compress the prompt once per chunk of C tokens (needs --prompt-len)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch", batch, "the most prompt tokens per llama_decode")->check(CLI::PositiveNumber);
  app.add_option("--policy", policy, "the per-token score summed over the model (h2o, tova, ...)");
  app.add_option("--threads", threads, "llama.cpp's threads")->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "repetitions of the speed runs (the median is printed)")->check(CLI::PositiveNumber);
  app.add_flag("--compare", compare, "compare every decision with kvoracle's decoder instead of timing");
  app.add_option("--tie-tolerance", tolerance,
                 "score gap under which a departure is a near tie (default: the engines' largest score difference)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--flash-attn", flash_attn, "llama.cpp's flash attention (refused: it hides the probabilities)");
  app.add_option("--sequences", sequences, "llama.cpp's n_seq_max (refused above 1)");
  app.add_flag("--f16-cache", f16, "K and V in f16 (default f32, as the comparison needs)");
  CLI11_PARSE(app, argc, argv);

  try {
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    llama_backend_init();
    kvo::llama_cpp::EvictingContextOptions o;
    o.policy = kvo::parse_policy(policy);
    if (contract.empty()) {
      o.contract.kept_sets = kvo::KeptSets::Model;
      o.contract.budget = budget > 0 ? budget : std::max(1, n / 5);
      o.contract.sinks = sinks;
      o.contract.recent = recent;
      o.contract.prompt_len = prompt_len;
      o.contract.chunk = chunk;
    } else {
      for (const char* own : {"--sinks", "--recent", "--chunk"})
        kvo::require(app.count(own) == 0, std::string("kvoracle-llama: ") + own +
                                              " belongs to the default contract; --contract names another");
      o.contract =
          kvo::read_engine_contract(kvo::json_text_or_file(contract, "kvoracle-llama: contract"), n, prompt_len, budget)
              .contract;
    }
    o.batch = batch;
    o.max_len = n;
    o.threads = threads;
    o.f32_cache = !f16;
    o.flash_attn = flash_attn;
    o.sequences = sequences;
    const kvo::model::Llama reference(model_path);  // kvoracle's tokenizer, and the comparison's decoder
    const std::vector<int> tokens = text_tokens(reference, text, n);
    llama_model_params mp = llama_model_default_params();
    std::unique_ptr<llama_model, void (*)(llama_model*)> model(llama_model_load_from_file(model_path.c_str(), mp),
                                                               llama_model_free);
    kvo::require(model != nullptr, "kvoracle-llama: llama.cpp cannot load " + model_path);
    if (compare) {
      std::cout << kvo::llama_cpp::compare_decisions(reference, model.get(), tokens, o, tolerance).render();
    } else {
      std::cout << kvo::llama_cpp::measure_speed(model.get(), tokens, o, reps).render();
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  return 0;
}
