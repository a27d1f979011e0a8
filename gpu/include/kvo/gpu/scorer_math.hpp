// The per-element math of the greedy scorer, shared by the CUDA kernels and the CPU twin: the
// same __host__ __device__ functions compile under nvcc and the host compiler, so the twin that
// the tests run on machines without a GPU executes the device code's arithmetic. C++17 (nvcc).
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define KVO_HD __host__ __device__ inline
#else
#define KVO_HD inline
#endif

namespace kvo::scorer {

// Keys of the kept slots in blocks of 8 slots: block b holds [d][8] floats, so 8 slots' x-th
// elements are contiguous (the twin loads them as one vector; GPU threads t..t+7 coalesce).
constexpr int kLanes = 8;
KVO_HD long key_offset(int slot, int x, int d) {
  return (static_cast<long>(slot / kLanes) * d + x) * kLanes + slot % kLanes;
}

// q . k in fp64, accumulated in index order: bit-identical to kvo::HeadView::logits, whose
// replays the twin must reproduce. Device code is compiled with -fmad=false for the same reason.
KVO_HD double dot_fp64(const float* q, const float* k, int d) {
  double s = 0.0;
  for (int x = 0; x < d; ++x) s += static_cast<double>(q[x]) * static_cast<double>(k[x]);
  return s;
}

// The same dot for one slot of the blocked key store.
KVO_HD double slot_dot_fp64(const float* q, const float* keys, int slot, int d) {
  double s = 0.0;
  for (int x = 0; x < d; ++x) s += static_cast<double>(q[x]) * static_cast<double>(keys[key_offset(slot, x, d)]);
  return s;
}

// Eight slots of one block at once, each lane accumulated in index order (vectorises across
// lanes without changing any lane's rounding).
KVO_HD void block_dot_fp64(const float* q, const float* block, int d, double* out) {
  double acc[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int x = 0; x < d; ++x) {
    const double qx = static_cast<double>(q[x]);
    for (int t = 0; t < kLanes; ++t) acc[t] += qx * static_cast<double>(block[x * kLanes + t]);
  }
  for (int t = 0; t < kLanes; ++t) out[t] = acc[t];
}

// Eviction order: the smaller score leaves first; among equal scores the older (smaller) token.
KVO_HD bool leaves_before(double score_a, int token_a, double score_b, int token_b) {
  return score_a < score_b || (score_a == score_b && token_a < token_b);
}

// A token may be evicted at step i when it is outside the recent window of r tokens.
KVO_HD bool is_candidate(int token, int step, int recent) { return token <= step - recent; }

// What the step does with the accumulated scores. H2O accumulates at every step (prefill
// included); Algorithm 2 only in its full branch (cache over budget, prompt done).
KVO_HD bool accumulates(bool paper, int size_with_new, int budget, int step, int prompt_len) {
  if (!paper) return true;
  return step >= prompt_len - 1 && size_with_new > budget;
}

// Whether step i truncates the cache to the budget (not during the prefill, as the replay engine).
KVO_HD bool evicts(int size_with_new, int budget, int step, int prompt_len) {
  return step >= prompt_len - 1 && size_with_new > budget;
}

}  // namespace kvo::scorer
