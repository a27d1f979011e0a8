// CUDA back end of the greedy scorer: one thread block per cache unit (layer, query head,
// budget) replays all n steps; threads split the kept slots for the logits (the shared fp64 dot
// of scorer_math.hpp, compiled with -fmad=false), CUB block reductions give the softmax maximum
// and sum and the eviction argmin (exact: a total order with the oldest-token tie rule). The
// kept slots are held in token order, as on the CPU.
#include <cuda_runtime.h>

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
                              int prompt_len, bool paper, int* order_all, double* score_all, double* work_all,
                              int* evict_out, double* score_out) {
  using Reduce = cub::BlockReduce<double, kBlock>;
  using ReduceVictim = cub::BlockReduce<Victim, kBlock>;
  __shared__ union {
    typename Reduce::TempStorage d;
    typename ReduceVictim::TempStorage v;
  } tmp;
  __shared__ float qs[kMaxDim];
  __shared__ int size;
  __shared__ double shared_value;
  __shared__ int best_pos;
  const DeviceJob job = jobs[blockIdx.x];
  const float* q = q_all + job.q_offset;
  const float* k = k_all + job.k_offset;
  int* order = order_all + job.state_offset;
  double* score = score_all + job.state_offset;
  double* work = work_all + job.state_offset;
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) size = 0;
  for (int i = 0; i < n; ++i) {
    __syncthreads();
    if (tid == 0) {
      order[size] = i;
      score[size] = 0.0;
      ++size;
    }
    for (int x = tid; x < d; x += kBlock) qs[x] = q[static_cast<long>(i) * d + x];
    __syncthreads();
    const int sz = size;
    if (scorer::accumulates(paper, sz, job.budget, i, prompt_len)) {
      double local = -INFINITY;
      for (int p = tid; p < sz; p += kBlock) {
        const double l = scale * scorer::dot_fp64(qs, k + static_cast<long>(order[p]) * d, d);
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
    while (true) {
      __syncthreads();
      const int cur = size;
      if (cur <= job.budget) break;
      Victim local{0.0, INT_MAX, -1};
      for (int p = tid; p < cur; p += kBlock) {
        const int t = order[p];
        if (!scorer::is_candidate(t, i, job.recent)) continue;
        const Victim v{score[p], t, p};
        local = VictimMin()(local, v);
      }
      const Victim best = ReduceVictim(tmp.v).Reduce(local, VictimMin());
      if (tid == 0) {
        best_pos = best.pos >= 0 ? best.pos : 0;  // no candidate: the oldest leaves
        evict_out[job.out_offset + order[best_pos]] = i;
        score_out[job.out_offset + order[best_pos]] = score[best_pos];
      }
      __syncthreads();
      // Close the gap: chunk by chunk, read the right neighbour, then write.
      for (int base = best_pos; base < cur - 1; base += kBlock) {
        const int p = base + tid;
        const bool mine = p < cur - 1;
        int t = 0;
        double s = 0.0;
        if (mine) {
          t = order[p + 1];
          s = score[p + 1];
        }
        __syncthreads();
        if (mine) {
          order[p] = t;
          score[p] = s;
        }
        __syncthreads();
      }
      if (tid == 0) size = cur - 1;
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
  void copy_to(std::vector<T>& host) const {
    check(cudaMemcpy(host.data(), p_, sizeof(T) * host.size(), cudaMemcpyDeviceToHost), "copy back");
  }

 private:
  T* p_ = nullptr;
};

}  // namespace

ScorerResult run_scorer_cuda_jobs(const Trace& tr, const std::vector<ScorerJob>& jobs, int prompt_len, bool paper) {
  const int n = tr.n_tokens, d = tr.head_dim;
  require(d <= kMaxDim, "the CUDA scorer supports head dimensions up to 512");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device properties");
  // Pack the queries and keys of the layers in use.
  std::vector<float> q, k;
  std::vector<long> q_layer(static_cast<size_t>(tr.n_layers), -1), k_layer(static_cast<size_t>(tr.n_layers), -1);
  for (const auto& j : jobs)
    if (q_layer[static_cast<size_t>(j.layer)] < 0) {
      q_layer[static_cast<size_t>(j.layer)] = static_cast<long>(q.size());
      k_layer[static_cast<size_t>(j.layer)] = static_cast<long>(k.size());
      q.insert(q.end(), tr.q[static_cast<size_t>(j.layer)].begin(), tr.q[static_cast<size_t>(j.layer)].end());
      k.insert(k.end(), tr.k[static_cast<size_t>(j.layer)].begin(), tr.k[static_cast<size_t>(j.layer)].end());
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
  const DeviceBuffer<float> dq(q), dk(k);
  const DeviceBuffer<DeviceJob> djobs(dj);
  const size_t outs = jobs.size() * static_cast<size_t>(n);
  const DeviceBuffer<int> order(static_cast<size_t>(state)), evict(outs);
  const DeviceBuffer<double> score(static_cast<size_t>(state)), work(static_cast<size_t>(state)), score_out(outs);
  check(cudaMemset(evict.get(), 0xff, sizeof(int) * outs), "memset");  // -1: kept to the end
  scorer_kernel<<<static_cast<unsigned>(jobs.size()), kBlock>>>(dq.get(), dk.get(), djobs.get(), n, d, tr.attn_scale,
                                                                prompt_len, paper, order.get(), score.get(), work.get(),
                                                                evict.get(), score_out.get());
  check(cudaGetLastError(), "launch");
  check(cudaDeviceSynchronize(), "kernel");
  std::vector<int> ev(outs);
  std::vector<double> sc(outs);
  evict.copy_to(ev);
  score_out.copy_to(sc);
  ScorerResult r;
  r.device = std::string("cuda: ") + prop.name;
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
