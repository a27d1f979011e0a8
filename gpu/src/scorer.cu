// CUDA back end of the greedy scorer: one thread block per cache unit (layer, query head,
// budget) replays all n steps; threads split the kept slots for the logits (the shared fp64 dot
// of scorer_math.hpp, compiled with -fmad=false), CUB block reductions give the softmax maximum
// and sum and the eviction argmin (exact: a total order with the oldest-token tie rule). The
// kept slots are held in token order, as on the CPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cub/block/block_reduce.cuh>
#include <string>
#include <vector>

#include "kvo/core/error.hpp"
#include "kvo/gpu/device.hpp"
#include "kvo/gpu/scorer_math.hpp"
#include "scorer_jobs.hpp"

namespace kvo {
namespace {

constexpr int kBlock = 128;
constexpr int kMaxDim = 512;

struct DeviceJob {
  long q_offset, k_offset;  // into the packed q and k arrays
  long state_offset;        // into the per-slot state arrays (capacity entries)
  long out_offset;          // into the per-token outputs (n entries)
  int budget, recent;
};

struct MaxOp {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

struct Victim {
  double score;
  int token, pos;
};
struct VictimMin {
  __device__ Victim operator()(const Victim& a, const Victim& b) const {
    if (a.pos < 0) return b;
    if (b.pos < 0) return a;
    return scorer::leaves_before(a.score, a.token, b.score, b.token) ? a : b;
  }
};

__global__ void scorer_kernel(const float* q_all, const float* k_all, const DeviceJob* jobs, int n, int d, double scale,
                              int prompt_len, bool paper, bool state_in_shared, int* order_all, double* score_all,
                              double* work_all, float* keys_all, int* evict_out, double* score_out) {
  using Reduce = cub::BlockReduce<double, kBlock>;
  using ReduceVictim = cub::BlockReduce<Victim, kBlock>;
  __shared__ union {
    typename Reduce::TempStorage d;
    typename ReduceVictim::TempStorage v;
  } tmp;
  __shared__ float qs[kMaxDim];
  __shared__ double shared_value;
  __shared__ int victim_pos;
  const DeviceJob job = jobs[blockIdx.x];
  const int capacity = static_cast<int>(jobs[blockIdx.x + 1].state_offset - job.state_offset);
  const float* q = q_all + job.q_offset;
  const float* k = k_all + job.k_offset;
  // The kept keys, dimension-major (element x of slot p at x * capacity + p): the threads of a
  // warp read consecutive slots of one dimension, so every load is coalesced.
  float* keys = keys_all + job.state_offset * d;
  extern __shared__ double state_smem[];  // score, work, then order: capacity entries each
  int* order = order_all + job.state_offset;
  double* score = score_all + job.state_offset;
  double* work = work_all + job.state_offset;
  if (state_in_shared) {
    score = state_smem;
    work = state_smem + capacity;
    order = reinterpret_cast<int*>(state_smem + 2 * capacity);
  }
  const int tid = static_cast<int>(threadIdx.x);
  int size = 0;  // every thread tracks it: insertions and evictions are block-uniform
  for (int i = 0; i < n; ++i) {
    __syncthreads();
    if (tid == 0) {
      order[size] = i;
      score[size] = 0.0;
    }
    for (int x = tid; x < d; x += kBlock) {
      qs[x] = q[static_cast<long>(i) * d + x];
      keys[static_cast<long>(x) * capacity + size] = k[static_cast<long>(i) * d + x];
    }
    ++size;
    __syncthreads();
    const int sz = size;
    if (scorer::accumulates(paper, sz, job.budget, i, prompt_len)) {
      double local = -INFINITY;
      for (int p = tid; p < sz; p += kBlock) {
        const double l = scale * scorer::strided_dot_fp64(qs, keys + p, capacity, d);
        work[p] = l;
        local = fmax(local, l);
      }
      const double m = Reduce(tmp.d).Reduce(local, MaxOp());
      if (tid == 0) shared_value = m;
      __syncthreads();
      const double mx = shared_value;
      double part = 0.0;
      for (int p = tid; p < sz; p += kBlock) {
        const double e = isfinite(mx) ? exp(work[p] - mx) : 1.0;
        work[p] = e;
        part += e;
      }
      __syncthreads();
      const double total = Reduce(tmp.d).Sum(part);
      if (tid == 0) shared_value = total;
      __syncthreads();
      const double sum = shared_value;
      for (int p = tid; p < sz; p += kBlock) score[p] += work[p] / sum;
    }
    if (!scorer::evicts(sz, job.budget, i, prompt_len)) continue;
    while (size > job.budget) {
      __syncthreads();
      Victim local{0.0, INT_MAX, -1};
      for (int p = tid; p < size; p += kBlock) {
        const int t = order[p];
        if (!scorer::is_candidate(t, i, job.recent)) continue;
        local = VictimMin()(local, Victim{score[p], t, p});
      }
      Victim best = ReduceVictim(tmp.v).Reduce(local, VictimMin());
      if (__syncthreads_or(tid == 0 && best.pos < 0)) {  // no candidate: the oldest token leaves
        Victim oldest{0.0, INT_MAX, -1};
        for (int p = tid; p < size; p += kBlock) oldest = VictimMin()(oldest, Victim{0.0, order[p], p});
        best = ReduceVictim(tmp.v).Reduce(oldest, VictimMin());
      }
      const int last = size - 1;
      if (tid == 0) {
        const int at = best.pos;
        evict_out[job.out_offset + order[at]] = i;
        score_out[job.out_offset + order[at]] = score[at];
        order[at] = order[last];  // the last slot fills the gap
        score[at] = score[last];
        victim_pos = at;
      }
      __syncthreads();
      const int at = victim_pos;
      if (at != last)
        for (int x = tid; x < d; x += kBlock)
          keys[static_cast<long>(x) * capacity + at] = keys[static_cast<long>(x) * capacity + last];
      --size;
    }
  }
  __syncthreads();
  for (int p = tid; p < size; p += kBlock) score_out[job.out_offset + order[p]] = score[p];
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

// Device memory owned for the length of one run: freed on every path out, errors included.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) { check(cudaMalloc(&p_, count * sizeof(T) + 1), "malloc"); }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    if (!host.empty()) check(cudaMemcpy(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "copy");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p_); }
  T* get() const { return p_; }
  void copy_from(const std::vector<T>& host, size_t offset) const {
    check(cudaMemcpy(p_ + offset, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "copy");
  }
  void copy_to(std::vector<T>& host) const {
    check(cudaMemcpy(host.data(), p_, sizeof(T) * host.size(), cudaMemcpyDeviceToHost), "copy back");
  }

 private:
  T* p_ = nullptr;
};

// Device 0's name and opt-in shared memory per block, read once (cudaGetDeviceProperties is slow).
struct DeviceInfo {
  std::string name;
  size_t shared_per_block = 0;
};
const DeviceInfo& device_info() {
  static const DeviceInfo info = [] {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "device properties");
    return DeviceInfo{prop.name, prop.sharedMemPerBlockOptin};
  }();
  return info;
}

}  // namespace

ScorerResult run_scorer_cuda_jobs(const Trace& tr, const std::vector<ScorerJob>& jobs, int prompt_len, bool paper) {
  const int n = tr.n_tokens, d = tr.head_dim;
  require(d <= kMaxDim, "the CUDA scorer supports head dimensions up to 512");
  const DeviceInfo& dev = device_info();
  // The queries and keys of the layers in use, copied layer by layer from the trace.
  std::vector<long> q_layer(static_cast<size_t>(tr.n_layers), -1), k_layer(static_cast<size_t>(tr.n_layers), -1);
  long q_size = 0, k_size = 0;
  for (const auto& j : jobs) {
    const auto l = static_cast<size_t>(j.layer);
    if (q_layer[l] >= 0) continue;
    q_layer[l] = q_size;
    k_layer[l] = k_size;
    q_size += static_cast<long>(tr.q[l].size());
    k_size += static_cast<long>(tr.k[l].size());
  }
  const DeviceBuffer<float> dq(static_cast<size_t>(q_size)), dk(static_cast<size_t>(k_size));
  for (size_t l = 0; l < q_layer.size(); ++l)
    if (q_layer[l] >= 0) {
      dq.copy_from(tr.q[l], static_cast<size_t>(q_layer[l]));
      dk.copy_from(tr.k[l], static_cast<size_t>(k_layer[l]));
    }
  std::vector<DeviceJob> dj;
  long state = 0;
  for (size_t x = 0; x < jobs.size(); ++x) {
    const auto& j = jobs[x];
    DeviceJob v{};
    v.q_offset = q_layer[static_cast<size_t>(j.layer)] + static_cast<long>(j.head) * n * d;
    v.k_offset = k_layer[static_cast<size_t>(j.layer)] + static_cast<long>(tr.kv_head_of(j.head)) * n * d;
    v.state_offset = state;
    v.out_offset = static_cast<long>(x) * n;
    v.budget = j.budget.total;
    v.recent = paper ? 0 : j.budget.recent;
    state += j.capacity;
    dj.push_back(v);
  }
  DeviceJob end{};  // sentinel: its state offset ends the last unit's state
  end.state_offset = state;
  dj.push_back(end);
  long max_capacity = 0;
  for (const auto& j : jobs) max_capacity = std::max(max_capacity, static_cast<long>(j.capacity));
  const size_t state_bytes = static_cast<size_t>(max_capacity) * (2 * sizeof(double) + sizeof(int));
  const bool state_in_shared = state_bytes + 8 * 1024 <= dev.shared_per_block;
  if (state_in_shared)
    check(
        cudaFuncSetAttribute(scorer_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(state_bytes)),
        "shared memory size");
  const DeviceBuffer<DeviceJob> djobs(dj);
  const size_t outs = jobs.size() * static_cast<size_t>(n);
  const DeviceBuffer<int> order(state_in_shared ? 0 : static_cast<size_t>(state)), evict(outs);
  const DeviceBuffer<double> score(state_in_shared ? 0 : static_cast<size_t>(state)),
      work(state_in_shared ? 0 : static_cast<size_t>(state)), score_out(outs);
  const DeviceBuffer<float> keys(static_cast<size_t>(state) * static_cast<size_t>(d));
  check(cudaMemset(evict.get(), 0xff, sizeof(int) * outs), "memset");  // -1: kept to the end
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  check(cudaEventRecord(start), "event");
  scorer_kernel<<<static_cast<unsigned>(jobs.size()), kBlock, state_in_shared ? state_bytes : 0>>>(
      dq.get(), dk.get(), djobs.get(), n, d, tr.attn_scale, prompt_len, paper, state_in_shared, order.get(),
      score.get(), work.get(), keys.get(), evict.get(), score_out.get());
  check(cudaGetLastError(), "launch");
  check(cudaEventRecord(stop), "event");
  check(cudaDeviceSynchronize(), "kernel");
  float kernel_ms = 0.0f;
  check(cudaEventElapsedTime(&kernel_ms, start, stop), "event time");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::vector<int> ev(outs);
  std::vector<double> sc(outs);
  evict.copy_to(ev);
  score_out.copy_to(sc);
  ScorerResult r;
  r.device = "cuda: " + dev.name;
  r.kernel_seconds = kernel_ms * 1e-3;
  r.units.resize(jobs.size());
  for (size_t x = 0; x < jobs.size(); ++x) {
    auto& u = r.units[x];
    u.layer = jobs[x].layer;
    u.head = jobs[x].head;
    u.budget_index = jobs[x].budget_index;
    u.budget = jobs[x].budget;
    u.evict_step.assign(ev.begin() + static_cast<long>(x) * n, ev.begin() + static_cast<long>(x + 1) * n);
    u.score.assign(sc.begin() + static_cast<long>(x) * n, sc.begin() + static_cast<long>(x + 1) * n);
  }
  return r;
}

}  // namespace kvo
