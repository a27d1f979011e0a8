// The per-element math of the greedy scorer, shared by the CUDA kernels and the CPU twin: the
// same __host__ __device__ functions compile under nvcc and the host compiler, so the twin that
// the tests run on machines without a GPU executes the device code's arithmetic. C++17 (nvcc).
#pragma once
#include <math.h>  // ::fma on the host and the device

#include "kvo/core/multiversion.hpp"

#if defined(__CUDACC__)
#define KVO_HD __host__ __device__ inline
#define KVO_HD_KERNEL __host__ __device__ inline
#else
#define KVO_HD inline
// The blocked dot loops stay out of line on the host: inlined with a constant d, GCC 12
// re-vectorises them across the element index with scalar inserts (3x slower). A portable build
// compiles them once per x86-64 level (kvo/core/multiversion.hpp).
#define KVO_HD_KERNEL __attribute__((noinline)) KVO_MULTIVERSION inline
#endif

namespace kvo::scorer {

// Keys of the kept slots in blocks of 8 slots: block b holds [d][8] values, so 8 slots' x-th
// elements are contiguous (one vector load). The CPU twin stores them converted to fp64 once, on
// insertion (float -> double is exact), instead of converting at every step.
constexpr int kLanes = 8;
KVO_HD long key_offset(int slot, int x, int d) {
  return (static_cast<long>(slot / kLanes) * d + x) * kLanes + slot % kLanes;
}

// q . k in fp64, one fused multiply-add per element in index order: bit-identical to
// kvo::HeadView::logits, whose replays the twin must reproduce, on the host and on the device
// (device code is compiled with -fmad=false so that only these explicit fmas are fused).
KVO_HD double dot_fp64(const float* q, const float* k, int d) {
  double s = 0.0;
  for (int x = 0; x < d; ++x) s = ::fma(static_cast<double>(q[x]), static_cast<double>(k[x]), s);
  return s;
}

// The same dot over a strided key (element x at k[x * stride]): the CUDA kernel's dimension-major
// store, where the threads of a warp read consecutive slots.
KVO_HD double strided_dot_fp64(const float* q, const float* k, long stride, int d) {
  double s = 0.0;
  for (int x = 0; x < d; ++x) s = ::fma(static_cast<double>(q[x]), static_cast<double>(k[x * stride]), s);
  return s;
}

// The same dot for one slot of the blocked key store.
KVO_HD double slot_dot_fp64(const float* q, const float* keys, int slot, int d) {
  double s = 0.0;
  for (int x = 0; x < d; ++x)
    s = ::fma(static_cast<double>(q[x]), static_cast<double>(keys[key_offset(slot, x, d)]), s);
  return s;
}

// Eight slots of one block at once, each lane accumulated in index order (vectorises across
// lanes without changing any lane's rounding).
template <typename Key>
KVO_HD_KERNEL void block_dot_fp64(const float* q, const Key* block, int d, double* out) {
  double acc[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int x = 0; x < d; ++x) {
    const double qx = static_cast<double>(q[x]);
    for (int t = 0; t < kLanes; ++t) acc[t] = ::fma(qx, static_cast<double>(block[x * kLanes + t]), acc[t]);
  }
  for (int t = 0; t < kLanes; ++t) out[t] = acc[t];
}

// Four blocks (32 slots) at once: four independent accumulator chains hide the add latency; every
// lane still sums in index order, so the result equals four block_dot_fp64 calls bit for bit.
template <typename Key>
KVO_HD_KERNEL void block4_dot_fp64(const float* q, const Key* blocks, int d, double* out) {
  double a0[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0}, a1[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  double a2[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0}, a3[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  const long stride = static_cast<long>(d) * kLanes;
  const Key* b0 = blocks;
  const Key* b1 = blocks + stride;
  const Key* b2 = blocks + 2 * stride;
  const Key* b3 = blocks + 3 * stride;
  for (int x = 0; x < d; ++x) {
    const double qx = static_cast<double>(q[x]);
    for (int t = 0; t < kLanes; ++t) {
      a0[t] = ::fma(qx, static_cast<double>(b0[x * kLanes + t]), a0[t]);
      a1[t] = ::fma(qx, static_cast<double>(b1[x * kLanes + t]), a1[t]);
      a2[t] = ::fma(qx, static_cast<double>(b2[x * kLanes + t]), a2[t]);
      a3[t] = ::fma(qx, static_cast<double>(b3[x * kLanes + t]), a3[t]);
    }
  }
  for (int t = 0; t < kLanes; ++t) {
    out[t] = a0[t];
    out[kLanes + t] = a1[t];
    out[2 * kLanes + t] = a2[t];
    out[3 * kLanes + t] = a3[t];
  }
}

// Logits of q over the first `slots` slots of the blocked store (whole blocks, groups of four).
template <typename Key>
KVO_HD void store_dot_fp64(const float* q, const Key* keys, int slots, int d, double* out) {
  const int blocks = (slots + kLanes - 1) / kLanes;
  int b = 0;
  for (; b + 4 <= blocks; b += 4) block4_dot_fp64(q, keys + static_cast<long>(b) * d * kLanes, d, out + b * kLanes);
  for (; b < blocks; ++b) block_dot_fp64(q, keys + static_cast<long>(b) * d * kLanes, d, out + b * kLanes);
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
