// The replay engine: runs an eviction policy over every (layer, head) of a trace and records,
// per step, what the query attended, what the cache kept, what left and what came back, the
// renormalised probabilities and the dense attention mass retained. Deterministic; parallel over
// cache units; fp64 arithmetic on fp32 storage.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/eviction_contract.hpp"
#include "kvo/core/run_config.hpp"
#include "kvo/core/trace.hpp"
#include "kvo/core/work_plan.hpp"

namespace kvo {

struct ReplayOptions {
  RunConfig run;            // policy, budget, GQA mode, prompt, seed, layers, heads
  bool record_sets = true;  // keep attended / kept sets per step
  bool record_probs = false;
  int threads = 0;                     // <= 0: all cores
  std::function<void()> on_unit_done;  // progress hook (called from worker threads)
  // Inspection hook after each observe (from worker threads): the checks read policy state here.
  std::function<void(int layer, int head, int step, const EvictionPolicy& policy)> on_step;
  // The policy obeys an engine's contract (contract_group.hpp) instead of run.budget_scope: the
  // units are (layer, KV head) (run.gqa kv-mean or kv-max), the contract's budget groups replay
  // together, each unit's policy gets k and the window the contract leaves it, and every step
  // evicts from the start (run.prompt_len is not read).
  std::optional<EvictionContract> contract;
};

struct StepRecord {
  std::vector<int> attended;   // keys query i saw
  std::vector<int> kept;       // S_i: the cache after step i
  std::vector<int> evicted;    // (S_{i-1} ∪ {i}) \ S_i
  std::vector<int> reentered;  // S_i \ (S_{i-1} ∪ {i}): only non-nested policies
  std::vector<double> probs;   // this head's renormalised probabilities over attended (if recorded)
  double retained_mass = 0.0;  // objective M: sum over attended of the dense attention a_{i,j}
  double accumulated = 0.0;    // objective A (h = id): sum over kept of A_i(j) = sum_{r=j..i} a_{r,j}
};

struct HeadReplay {
  int layer = 0;
  int head = 0;  // query head
  ResolvedBudget budget;
  std::vector<StepRecord> steps;
  long reentries = 0;
  long evictions = 0;
  double mean_retained_mass = 0.0;  // over steps >= prompt_len
  // S_i after every step (what schedule_value and the offline ordering take).
  std::vector<std::vector<int>> kept_sets() const;
};

struct ReplayResult {
  PolicyId id = PolicyId::H2O;
  std::string policy;  // the policy's display name (greedy: "greedy:<objective>")
  bool nested = true;
  GqaMode gqa = GqaMode::PerQueryHead;
  BudgetScope budget_scope = BudgetScope::Head;  // who shared a budget (HeadReplay::budget is each unit's share)
  std::vector<HeadReplay> heads;                 // ordered by (layer, head)
};

// replay's work as independent units (one query head, or one KV group when heads share a cache;
// under a shared budget scope, the caches of a layer or of the model together), cache unit u seeded
// with run.seed + u: what `kvoracle replay` and the offline oracle spread over MPI
// ranks (scaleout/unit_runner.hpp). replay() runs every unit on threads, then assemble().
class ReplayPlan final : public WorkPlan<ReplayResult> {
 public:
  ReplayPlan(const Trace& trace, ReplayOptions options);  // validates; the trace must outlive it
  int size() const override;
  std::string name(int unit) const override;  // "layer 3 head 5"
  std::vector<HeadReplay> run(int unit) const;
  ReplayResult assemble(std::vector<std::vector<HeadReplay>> units) const;  // heads by (layer, head)
  // The work-plan form: a unit's heads as bytes (encode_heads), and the result from every unit's bytes.
  std::string run_bytes(int unit) const override;
  ReplayResult assemble_bytes(const std::vector<std::string>& units) const override;
  const ReplayOptions& options() const { return o_; }

 private:
  struct Units;
  const Trace& trace_;
  ReplayOptions o_;
  std::string name_;
  bool nested_ = true;
  std::shared_ptr<const Units> units_;
};

ReplayResult replay(const Trace& trace, const ReplayOptions& options);

// A unit's heads as bytes (CBOR, every double bit for bit) and back; kvo::Error when malformed.
std::string encode_heads(const std::vector<HeadReplay>& heads);
std::vector<HeadReplay> decode_heads(const std::string& bytes);

// Number of cache units replay() will run (for progress bars).
int replay_units(const Trace& trace, const ReplayOptions& options);

}  // namespace kvo
