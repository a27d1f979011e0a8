// Dispatch of the greedy scorer (device choice), job list, kept sets and the work model.
#include "kvo/gpu/scorer.hpp"

#include <algorithm>

#include "kvo/core/error.hpp"
#include "kvo/gpu/device.hpp"
#include "kvo/gpu/scorer_math.hpp"
#include "scorer_jobs.hpp"

namespace kvo {

std::vector<Budget> ScorerOptions::budgets() const {
  if (totals.empty()) return {run.budget};
  std::vector<Budget> out;
  for (const Amount& t : totals) out.push_back(run.budget.with_total(t));
  return out;
}

ScorerVariant ScorerOptions::variant() const {
  const ScorerVariant v = policy_traits(run.policy.id).scorer;
  if (v == ScorerVariant::None)  // the message is built only when it is needed
    throw Error("the greedy scorer replays " +
                policy_names_where([](const PolicyTraits& t) { return t.scorer != ScorerVariant::None; }) + ", not '" +
                policy_name(run.policy.id) + "'");
  return v;
}

ScorerDevice parse_scorer_device(const std::string& name) {
  if (name == "cpu") return ScorerDevice::Cpu;
  if (name == "cuda") return ScorerDevice::Cuda;
  if (name == "auto") return ScorerDevice::Auto;
  throw Error("unknown device '" + name + "' (expected cpu, cuda or auto)");
}

std::vector<ScorerJob> scorer_jobs(const Trace& tr, const ScorerOptions& o) {
  o.variant();
  require(o.run.gqa == GqaMode::PerQueryHead, "the greedy scorer keeps one cache per query head: gqa must be query");
  o.run.validate(tr);
  const std::vector<int> layers = o.run.chosen_layers(tr.n_layers), heads = o.run.chosen_heads(tr.n_heads);
  for (int l : layers)
    require(tr.has_qk(l), "the scorer needs queries and keys; layer " + std::to_string(l) +
                              " of the trace holds dense attention only");
  const std::vector<Budget> budgets = o.budgets();
  std::vector<ScorerJob> jobs;
  for (size_t b = 0; b < budgets.size(); ++b)
    for (int l : layers)
      for (int h : heads) {
        ScorerJob j;
        j.layer = l;
        j.head = h;
        j.budget_index = static_cast<int>(b);
        j.budget = budgets[b].resolve(tr.n_tokens, l, h);
        const int slots = std::max(j.budget.total, o.run.prompt_len) + 1;
        j.capacity = (slots + scorer::kLanes - 1) / scorer::kLanes * scorer::kLanes;
        jobs.push_back(j);
      }
  return jobs;
}

ScorerResult run_scorer_cuda(const Trace& trace, const ScorerOptions& o) {
  std::string why;
  if (gpu::device_count(&why) == 0) throw Error("no CUDA device: " + why);
  return run_scorer_cuda_jobs(trace, scorer_jobs(trace, o), o.run.prompt_len, o.variant() == ScorerVariant::Paper);
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
