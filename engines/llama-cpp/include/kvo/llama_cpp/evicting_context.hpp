// kvoracle's eviction manager deciding inside llama.cpp, with the memory really freed: a llama.cpp
// context decodes one sequence (token by token, or a prompt in batches between the steps where the
// contract may evict), its attention probabilities are read through its graph callback (flash
// attention off), fed per (layer, KV head) to a KvEvictionManager under a whole-model kept set,
// and the positions it evicts leave llama.cpp's cache (llama_memory_seq_rm). docs/llama.md shows it
// in use and what it was measured to do.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "kvo/core/cache_manager.hpp"
#include "kvo/core/policy_registry.hpp"
#include "llama.h"

namespace kvo::llama_cpp {

struct EvictingContextOptions {
  PolicyId policy = PolicyId::H2O;  // any policy with a per-token score (the contract sums it over the model)
  // What may be evicted: kept_sets must be model (llama.cpp removes a position from every layer and
  // KV head at once); budget, sinks, window, pages, compressions, a delay or admission only as in
  // core/eviction_contract.hpp.
  EvictionContract contract;
  int max_len = 0;  // the most positions the sequence reaches
  int threads = 1;
  bool f32_cache = true;  // K and V in f32 (false: f16, llama.cpp's default)
  // llama.cpp's own settings, refused in one line where they cannot work with eviction:
  bool flash_attn = false;  // the probabilities are fused away
  int sequences = 1;        // n_seq_max: sequences sharing the context's cache
  int context = 0;          // n_ctx in cells; 0: what the contract holds at most, plus the new token
  int batch = 256;          // the most tokens prefill() gives one llama_decode (n_batch, n_ubatch)
  EvictionSteer steer;      // the decoder's say in each eviction (core/contract_group.hpp)
};

// The manager for `options` over a model of these layers and KV heads: what EvictingContext builds,
// and what kvoracle's own decoder gets when its decisions are compared (llama_study.hpp).
CacheManagerOptions manager_options(const EvictingContextOptions& options, int n_layers, int n_kv_heads);
// llama.cpp's context settings for `options` with n_ctx cells: flash attention off, one sequence,
// one token per batch (EvictingContext raises it to options.batch), the K/V type and threads; no
// callback. The full-cache baselines use them too.
llama_context_params context_params(const EvictingContextOptions& options, int n_ctx);

class EvictingContext {
 public:
  // Creates the llama.cpp context for `model` (which must outlive it). kvo::Error naming the
  // setting for what cannot work: flash attention on, several sequences, a kept set other than the
  // model's, a budget the model's trained context or the given n_ctx cannot hold, a policy without
  // a per-token score, a contract that does not validate for max_len.
  EvictingContext(llama_model* model, const EvictingContextOptions& options);
  ~EvictingContext();
  EvictingContext(const EvictingContext&) = delete;
  EvictingContext& operator=(const EvictingContext&) = delete;

  // Decodes the next token (its position: the tokens fed so far) and removes from llama.cpp's cache
  // what the manager evicts at this step; returns those positions, ascending. kvo::Error when
  // llama.cpp fails, the sequence is full, or the cells llama.cpp attends depart from the positions
  // the manager holds.
  std::vector<int> decode(int token);
  // Decodes `tokens` at the next positions, as decode() token by token would, but in batches of
  // up to options.batch tokens, one llama_decode each: a batch ends after each step where the
  // contract may evict (KvEvictionManager::lockstep_at: its compression steps, such as the end of
  // each prefill chunk; otherwise every step once the cache can exceed its budget), so no token
  // of a batch attends a position evicted before it. The positions, evictions and logits() are
  // then those of decode() token by token, up to the rounding of batched matrix products.
  // Returns the positions evicted, ascending.
  std::vector<int> prefill(std::span<const int> tokens);
  // The last token's logits [vocab], owned by llama.cpp until the next decode.
  const float* logits() const;
  int position() const;
  long llama_decodes() const;  // the llama_decode calls so far: one per decode(), one per batch of prefill()
  // The positions llama.cpp's cache holds, ascending (each in every layer and KV head).
  std::vector<int> held() const;
  // llama_state_seq_get_size: llama.cpp's own size of the sequence's saved state, which grows with
  // the cells it holds.
  size_t state_bytes() const;
  int context_cells() const;  // n_ctx as llama.cpp padded it
  const KvEvictionManager& manager() const;
  llama_context* context() const;

 private:
  std::vector<int> run(std::span<const int> tokens);  // one llama_decode
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvo::llama_cpp
