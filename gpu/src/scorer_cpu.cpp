// The CPU twin of the greedy scorer: one cache unit (layer, query head, budget) per task, threads
// over units, every element computed by the shared functions of scorer_math.hpp. Slots keep their
// keys in fp64 blocks of 8 (one vector load per element index); a token-ordered slot list gives the
// softmax the same summation order as the core replay engine, so the results are bit-identical.
#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "kvo/core/error.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/gpu/scorer.hpp"
#include "kvo/gpu/scorer_math.hpp"
#include "scorer_jobs.hpp"

namespace kvo {
namespace {

using namespace kvo::scorer;

void run_unit(const Trace& tr, const ScorerOptions& o, const ScorerJob& job, ScorerUnit& out) {
  const int n = tr.n_tokens, d = tr.head_dim;
  const float* q = tr.q[static_cast<size_t>(job.layer)].data() + static_cast<size_t>(job.head) * n * d;
  const float* k = tr.k[static_cast<size_t>(job.layer)].data() + static_cast<size_t>(tr.kv_head_of(job.head)) * n * d;
  const bool paper = o.variant == ScorerVariant::Paper;
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
    if (accumulates(paper, size, budget, i, o.prompt_len)) {
      const float* qi = q + static_cast<size_t>(i) * d;
      store_dot_fp64(qi, keys.data(), high, d, logit.data());
      // Softmax over the slots in token order, as the replay engine: max, exp, sum, divide.
      double m = -std::numeric_limits<double>::infinity();
      for (int s : order) {
        logit[static_cast<size_t>(s)] *= tr.attn_scale;
        m = std::max(m, logit[static_cast<size_t>(s)]);
      }
      double sum = 0.0;
      for (int s : order) {
        expo[static_cast<size_t>(s)] = std::isfinite(m) ? std::exp(logit[static_cast<size_t>(s)] - m) : 1.0;
        sum += expo[static_cast<size_t>(s)];
      }
      for (int s : order) score[static_cast<size_t>(s)] += expo[static_cast<size_t>(s)] / sum;
    }
    if (!evicts(size, budget, i, o.prompt_len)) continue;
    while (static_cast<int>(order.size()) > budget) {
      size_t best = 0;  // no candidate (window covers the cache): the oldest leaves, as the replay engine
      bool found = false;
      for (size_t p = 0; p < order.size(); ++p) {
        const int s = order[p];
        if (!is_candidate(token[static_cast<size_t>(s)], i, recent)) break;  // order is by token
        if (!found || leaves_before(score[static_cast<size_t>(s)], token[static_cast<size_t>(s)],
                                    score[static_cast<size_t>(order[best])], token[static_cast<size_t>(order[best])]))
          best = p;
        found = true;
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
  ScorerResult r;
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.device = "cpu twin (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
  r.units.resize(jobs.size());
  parallel_for(static_cast<int>(jobs.size()), threads,
               [&](int x) { run_unit(trace, o, jobs[static_cast<size_t>(x)], r.units[static_cast<size_t>(x)]); });
  return r;
}

}  // namespace kvo
