// The CPU twin of the greedy scorer: one cache unit (layer, query head, budget) per task, threads
// over units, every element computed by the shared functions of scorer_math.hpp. Slots keep their
// keys in fp64 blocks of 8 (one vector load per element index); a token-ordered slot list gives the
// softmax the same summation order as the core replay engine, so the results are bit-identical.
#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "kvo/core/error.hpp"
#include "kvo/core/exp_fp64.hpp"
#include "kvo/core/lane_sum.hpp"
#include "kvo/core/multiversion.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/gpu/scorer.hpp"
#include "kvo/gpu/scorer_math.hpp"
#include "scorer_jobs.hpp"

namespace kvo {
namespace {

using namespace kvo::scorer;

// max of v[0, n) and min of v[idx[0, n)] in eight independent lanes (exact in any order).
double max_of(const double* v, int n) {
  double lane[8];
  std::fill(lane, lane + 8, -std::numeric_limits<double>::infinity());
  int t = 0;
  for (; t + 8 <= n; t += 8)
    for (int l = 0; l < 8; ++l) lane[l] = std::max(lane[l], v[t + l]);
  for (int l = 0; t < n; ++t, ++l) lane[l] = std::max(lane[l], v[t]);
  return *std::max_element(lane, lane + 8);
}

double min_of_gathered(const double* v, const int* idx, size_t n) {
  double lane[8];
  std::fill(lane, lane + 8, std::numeric_limits<double>::infinity());
  size_t t = 0;
  for (; t + 8 <= n; t += 8)
    for (size_t l = 0; l < 8; ++l) lane[l] = std::min(lane[l], v[idx[t + l]]);
  for (size_t l = 0; t < n; ++t, ++l) lane[l] = std::min(lane[l], v[idx[t]]);
  return *std::min_element(lane, lane + 8);
}

// One unit, as the CUDA back end gets it: validated job, prompt length, Algorithm 2's variant or not.
// One version per x86-64 level: the softmax's exp_fp64 is inlined into it.
KVO_MULTIVERSION void run_unit(const Trace& tr, const ScorerJob& job, int prompt_len, bool paper, ScorerUnit& out) {
  const int n = tr.n_tokens, d = tr.head_dim;
  const float* q = tr.q[static_cast<size_t>(job.layer)].data() + static_cast<size_t>(job.head) * n * d;
  const float* k = tr.k[static_cast<size_t>(job.layer)].data() + static_cast<size_t>(tr.kv_head_of(job.head)) * n * d;
  const int budget = job.budget.total, recent = paper ? 0 : job.budget.recent;
  const int cap = job.capacity;
  std::vector<int> token(static_cast<size_t>(cap), -1), order, free_slots;
  std::vector<double> score(static_cast<size_t>(cap), 0.0), logit(static_cast<size_t>(cap), 0.0),
      expo(static_cast<size_t>(cap), 0.0);
  std::vector<double> keys(static_cast<size_t>(cap) * static_cast<size_t>(d), 0.0);
  order.reserve(static_cast<size_t>(cap));
  for (int s = cap - 1; s >= 0; --s) free_slots.push_back(s);
  int high = 0;  // slots [0, high) have been used
  out.layer = job.layer;
  out.head = job.head;
  out.budget_index = job.budget_index;
  out.budget = job.budget;
  out.evict_step.assign(static_cast<size_t>(n), -1);
  out.score.assign(static_cast<size_t>(n), 0.0);
  for (int i = 0; i < n; ++i) {
    const int slot = free_slots.back();
    free_slots.pop_back();
    high = std::max(high, slot + 1);
    token[static_cast<size_t>(slot)] = i;
    score[static_cast<size_t>(slot)] = 0.0;
    for (int x = 0; x < d; ++x)
      keys[static_cast<size_t>(key_offset(slot, x, d))] = static_cast<double>(k[static_cast<size_t>(i) * d + x]);
    order.push_back(slot);
    const int size = static_cast<int>(order.size());
    if (accumulates(paper, size, budget, i, prompt_len)) {
      const float* qi = q + static_cast<size_t>(i) * d;
      store_dot_fp64(qi, keys.data(), high, d, logit.data());
      // The softmax of the replay engine (kvo::softmax) over the kept tokens: the max, exp_fp64 of
      // the differences, their lane_sum in token order, the quotients. Slot-wise steps run over the
      // contiguous slots [0, high) (free slots among them get logit -inf: probability 0, unused).
      for (int s = 0; s < high; ++s) logit[static_cast<size_t>(s)] *= tr.attn_scale;
      for (int s : free_slots)
        if (s < high) logit[static_cast<size_t>(s)] = -std::numeric_limits<double>::infinity();
      const double m = max_of(logit.data(), high);
      if (std::isfinite(m)) {
        for (int s = 0; s < high; ++s) expo[static_cast<size_t>(s)] = exp_fp64(logit[static_cast<size_t>(s)] - m);
        const double sum = lane_sum(order.size(), [&](size_t p) { return expo[static_cast<size_t>(order[p])]; });
        for (int s = 0; s < high; ++s) score[static_cast<size_t>(s)] += expo[static_cast<size_t>(s)] / sum;
      } else {  // every logit -inf: uniform, as kvo::softmax
        const double u = 1.0 / static_cast<double>(order.size());
        for (int s : order) score[static_cast<size_t>(s)] += u;
      }
    }
    if (!evicts(size, budget, i, prompt_len)) continue;
    while (static_cast<int>(order.size()) > budget) {
      // The candidates are a prefix of `order` (token order); the victim is the first one with the
      // smallest score: leaves_before's rule (smaller score, then older token). No candidate (the
      // window covers the cache): the oldest leaves, as the replay engine.
      size_t c = 0;
      while (c < order.size() && is_candidate(token[static_cast<size_t>(order[c])], i, recent)) ++c;
      size_t best = 0;
      if (c > 0) {
        const double low = min_of_gathered(score.data(), order.data(), c);
        while (score[static_cast<size_t>(order[best])] != low) ++best;
      }
      const int v = order[best];
      out.evict_step[static_cast<size_t>(token[static_cast<size_t>(v)])] = i;
      out.score[static_cast<size_t>(token[static_cast<size_t>(v)])] = score[static_cast<size_t>(v)];
      order.erase(order.begin() + static_cast<long>(best));
      token[static_cast<size_t>(v)] = -1;
      free_slots.push_back(v);
    }
  }
  for (int s : order) out.score[static_cast<size_t>(token[static_cast<size_t>(s)])] = score[static_cast<size_t>(s)];
}

}  // namespace

ScorerResult run_scorer_cpu(const Trace& trace, const ScorerOptions& o) {
  const std::vector<ScorerJob> jobs = scorer_jobs(trace, o);
  const bool paper = o.variant() == ScorerVariant::Paper;
  ScorerResult r;
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.device = "cpu twin (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
  r.units.resize(jobs.size());
  parallel_for(static_cast<int>(jobs.size()), threads, [&](int x) {
    run_unit(trace, jobs[static_cast<size_t>(x)], o.run.prompt_len, paper, r.units[static_cast<size_t>(x)]);
  });
  return r;
}

}  // namespace kvo
