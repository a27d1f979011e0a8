// Dispatch of the greedy scorer (device choice), job list, kept sets and the work model.
#include "kvo/gpu/scorer.hpp"

#include <algorithm>

#include "kvo/core/error.hpp"
#include "kvo/gpu/device.hpp"
#include "kvo/gpu/scorer_math.hpp"
#include "scorer_jobs.hpp"

namespace kvo {

ScorerVariant parse_scorer_variant(const std::string& policy) {
  if (policy == "h2o" || policy == "h2o-realdrop") return ScorerVariant::H2O;
  if (policy == "h2o-paper") return ScorerVariant::Paper;
  throw Error("the greedy scorer replays h2o, h2o-realdrop and h2o-paper, not '" + policy + "'");
}

ScorerDevice parse_scorer_device(const std::string& name) {
  if (name == "cpu") return ScorerDevice::Cpu;
  if (name == "cuda") return ScorerDevice::Cuda;
  if (name == "auto") return ScorerDevice::Auto;
  throw Error("unknown device '" + name + "' (expected cpu, cuda or auto)");
}

std::vector<ScorerJob> scorer_jobs(const Trace& tr, const ScorerOptions& o) {
  require(!o.budgets.empty(), "the scorer needs at least one budget");
  require(o.prompt_len >= 0 && o.prompt_len <= tr.n_tokens,
          "prompt length " + std::to_string(o.prompt_len) + " is outside [0, " + std::to_string(tr.n_tokens) + "]");
  std::vector<int> layers = o.layers;
  if (layers.empty())
    for (int l = 0; l < tr.n_layers; ++l) layers.push_back(l);
  for (int l : layers) {
    require(l >= 0 && l < tr.n_layers, "layer " + std::to_string(l) + " is not in the trace");
    require(tr.has_qk(l), "the scorer needs queries and keys; layer " + std::to_string(l) +
                              " of the trace holds dense attention only");
  }
  std::vector<ScorerJob> jobs;
  for (size_t b = 0; b < o.budgets.size(); ++b)
    for (int l : layers)
      for (int h = 0; h < tr.n_heads; ++h) {
        ScorerJob j;
        j.layer = l;
        j.head = h;
        j.budget_index = static_cast<int>(b);
        j.budget = o.budgets[b].resolve(tr.n_tokens, l, h);
        const int slots = std::max(j.budget.total, o.prompt_len) + 1;
        j.capacity = (slots + scorer::kLanes - 1) / scorer::kLanes * scorer::kLanes;
        jobs.push_back(j);
      }
  return jobs;
}

ScorerResult run_scorer(const Trace& trace, const ScorerOptions& o) {
  if (o.device == ScorerDevice::Cpu) return run_scorer_cpu(trace, o);
  if (o.device == ScorerDevice::Cuda) return run_scorer_cuda(trace, o);
  return gpu::device_count() > 0 ? run_scorer_cuda(trace, o) : run_scorer_cpu(trace, o);
}

std::vector<int> kept_after(const ScorerUnit& u, int step) {
  std::vector<int> kept;
  for (int j = 0; j <= step && j < static_cast<int>(u.evict_step.size()); ++j)
    if (u.evict_step[static_cast<size_t>(j)] < 0 || u.evict_step[static_cast<size_t>(j)] > step) kept.push_back(j);
  return kept;
}

double scorer_flops_per_step(int slots, int d) { return 2.0 * slots * d; }
double scorer_bytes_per_step(int slots, int d, int key_bytes) {
  return static_cast<double>(key_bytes) * slots * d + 4.0 * d + 16.0 * slots;
}

}  // namespace kvo
