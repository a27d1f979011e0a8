// A probe of kvoracle evicting inside llama.cpp (bench/llama-probe builds and runs it): observes
// llama.cpp's attention probabilities through its graph callback (flash attention off), maps cache
// cells to positions through the attention mask, evicts under the whole-model tied-set contract
// with accumulated attention (h2o summed over every layer and head, sinks and a recent window kept)
// and removes the chosen positions with llama_memory_seq_rm, so the memory is really freed.
// Prints decode tokens/s against a full cache in the same run and each sequence's state size,
// llama.cpp's own count of the cells it holds. A first step: the decisions are not yet those of
// kvoracle's eviction manager (docs/engines.md, "Inside llama.cpp").
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

namespace {

struct Probe {
  int n_layer = 0, n_head = 0;
  int pos = 0;                // the position being decoded
  std::vector<int> cell_pos;  // position held by each cell; -1 free
  std::vector<double> score;  // accumulated attention by position
  int new_cell = -1;          // the cell the decoded token took
  long observed = 0;
};

bool on_tensor(ggml_tensor* t, bool ask, void* user) {
  auto& p = *static_cast<Probe*>(user);
  if (std::strncmp(t->name, "kq_soft_max-", 12) != 0) return ask ? false : true;
  if (ask) return true;
  const int layer = std::atoi(t->name + 12);
  const ggml_tensor* mask = t->src[1];
  if (t->type != GGML_TYPE_F32 || mask == nullptr || t->ne[1] != 1) {
    std::fprintf(stderr, "probe: unexpected kq_soft_max layout\n");
    std::exit(2);
  }
  const int64_t n_kv = t->ne[0];
  if (layer == 0) {
    // The mask row of the one token: 0 where it attends, -inf elsewhere.
    p.new_cell = -1;
    for (int64_t c = 0; c < n_kv; ++c) {
      float m = 0;
      if (mask->type == GGML_TYPE_F32) {
        m = static_cast<const float*>(mask->data)[c];
      } else {
        m = ggml_fp16_to_fp32(static_cast<const ggml_fp16_t*>(mask->data)[c]);
      }
      if (std::isinf(m)) continue;
      if (p.cell_pos[static_cast<size_t>(c)] < 0) {
        if (p.new_cell >= 0) {
          std::fprintf(stderr, "probe: two new cells\n");
          std::exit(2);
        }
        p.new_cell = static_cast<int>(c);
      }
    }
    if (p.new_cell < 0) {
      std::fprintf(stderr, "probe: no new cell at %d\n", p.pos);
      std::exit(2);
    }
    p.cell_pos[static_cast<size_t>(p.new_cell)] = p.pos;
  }
  const float* probs = static_cast<const float*>(t->data);
  for (int64_t h = 0; h < t->ne[2]; ++h) {
    const float* row = probs + h * (t->nb[2] / sizeof(float));
    for (int64_t c = 0; c < n_kv; ++c) {
      const int q = p.cell_pos[static_cast<size_t>(c)];
      if (q >= 0) p.score[static_cast<size_t>(q)] += row[c];
    }
  }
  ++p.observed;
  return true;
}

struct RunResult {
  double tok_s = 0;
  size_t state_bytes = 0;
  int held = 0;
  long evictions = 0;
};

RunResult run(llama_model* model, const std::vector<llama_token>& tokens, int budget, int sinks, int window,
              bool evict) {
  const int n = static_cast<int>(tokens.size());
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(evict ? budget + 1 : n);
  cp.n_batch = cp.n_ubatch = 1;
  cp.n_seq_max = 1;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.n_threads = cp.n_threads_batch = 1;
  Probe probe;
  if (evict) {
    cp.cb_eval = on_tensor;
    cp.cb_eval_user_data = &probe;
  }
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) {
    std::fprintf(stderr, "probe: context failed\n");
    std::exit(2);
  }
  probe.cell_pos.assign(llama_n_ctx(ctx), -1);
  probe.score.assign(static_cast<size_t>(n), 0.0);
  llama_memory_t mem = llama_get_memory(ctx);
  RunResult r;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    probe.pos = i;
    llama_token tok = tokens[static_cast<size_t>(i)];
    if (llama_decode(ctx, llama_batch_get_one(&tok, 1)) != 0) {
      std::fprintf(stderr, "probe: decode failed at %d\n", i);
      std::exit(2);
    }
    if (!evict) continue;
    int held = 0;
    for (int q : probe.cell_pos) held += q >= 0;
    while (held > budget) {
      int victim = -1;
      size_t victim_cell = 0;
      for (size_t c = 0; c < probe.cell_pos.size(); ++c) {
        const int q = probe.cell_pos[c];
        if (q < 0 || q < sinks || q > i - window) continue;
        if (victim < 0 || probe.score[static_cast<size_t>(q)] < probe.score[static_cast<size_t>(victim)] ||
            (probe.score[static_cast<size_t>(q)] == probe.score[static_cast<size_t>(victim)] && q < victim)) {
          victim = q;
          victim_cell = c;
        }
      }
      if (!llama_memory_seq_rm(mem, 0, victim, victim + 1)) {
        std::fprintf(stderr, "probe: seq_rm refused %d\n", victim);
        std::exit(2);
      }
      probe.cell_pos[victim_cell] = -1;
      --held;
      ++r.evictions;
    }
    r.held = held;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.tok_s = n / s;
  r.state_bytes = llama_state_seq_get_size(ctx, 0);
  llama_free(ctx);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf N BUDGET [SINKS WINDOW]\n", argv[0]);
    return 2;
  }
  const int n = std::atoi(argv[2]), budget = std::atoi(argv[3]);
  const int sinks = argc > 4 ? std::atoi(argv[4]) : 4, window = argc > 5 ? std::atoi(argv[5]) : 16;
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) {
    std::fprintf(stderr, "probe: cannot load %s\n", argv[1]);
    return 2;
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(100, llama_vocab_n_tokens(llama_model_get_vocab(model)) - 1);
  std::vector<llama_token> tokens(static_cast<size_t>(n));
  for (auto& t : tokens) t = pick(rng);
  const RunResult full = run(model, tokens, budget, sinks, window, false);
  const RunResult ev = run(model, tokens, budget, sinks, window, true);
  std::printf("n=%d budget=%d full: %.1f tok/s state %zu B | evicting: %.1f tok/s state %zu B held %d evictions %ld\n",
              n, budget, full.tok_s, full.state_bytes, ev.tok_s, ev.state_bytes, ev.held, ev.evictions);
  llama_model_free(model);
  return 0;
}
