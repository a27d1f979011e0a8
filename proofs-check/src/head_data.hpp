// Internal: the per-head claim checks as one streaming pass. For one (layer, query head) every
// policy is replayed in lockstep; each step's dense attention row a(i, .), the accumulated scores
// A_i(.) and the policies' records and score arrays are handed to every check and then dropped,
// so a head needs O(n (d + k)) memory and one attention pass whatever the number of checks.
// Sampled checks (the brute-force ones) act at steps chosen from the runs' eviction pattern.
#pragma once
#include <Eigen/Dense>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kvo/core/attention.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/oracle/competitive.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/proofs_check/check_options.hpp"
#include "kvo/proofs_check/report.hpp"

namespace kvo::detail {

inline constexpr double kLine = 1.0 - 1.0 / std::numbers::e;  // the (1 - 1/e) line

struct RunInfo {
  PolicyId id = PolicyId::H2O;
  std::string name;
  bool nested = true;
  bool scores = false;  // the policy exposes a score per token (h2o: accumulated attention, h2o-paper: õ)
};

// What a check knows about its head before the pass.
struct HeadInfo {
  const Trace* trace = nullptr;
  int layer = 0, head = 0, n = 0, prompt_len = 0;
  ResolvedBudget budget;
  std::optional<HeadView> view;
  std::vector<RunInfo> runs;  // in o.policies order
  int k() const { return budget.total; }
  int run_index(PolicyId id) const;  // -1 when not replayed
};
HeadInfo head_info(const Trace& trace, int layer, int head, const TraceChecksOptions& o);

// One policy at step i.
struct RunStep {
  const StepRecord* cur = nullptr;   // attended, kept, evicted, probs of step i
  const StepRecord* prev = nullptr;  // step i - 1 (empty sets at i = 0)
  std::span<const double> scores;    // the policy's score of each token after step i (empty: none)
  double score(int j) const { return j < static_cast<int>(scores.size()) ? scores[static_cast<size_t>(j)] : 0.0; }
};

// Step i of the head, as every check sees it.
struct HeadStep {
  int i = 0;
  std::span<const double> logits;  // query i over keys 0..i
  std::span<const double> a;       // dense attention a(i, j), j <= i
  std::span<const double> acc;     // A_i(j) = sum_{r = j..i} a(r, j)
  std::vector<RunStep> runs;       // in HeadInfo::runs order
  // Dense rows i - W + 1 .. i, oldest first (W = min(16, i + 1)); kept only when a check asks.
  std::span<const std::vector<double>> window;
};

// Per-step series of the whole head, complete when the checks finish (O(n) each).
struct RunSeries {
  std::vector<int> evicted;                // tokens evicted at each step
  std::vector<double> v_acc, now_acc;      // A_i(S_i), A_i(S_{i-1})
  std::vector<double> v_score, now_score;  // the same with the run's own scores (runs with scores)
  std::vector<double> top_score;           // top-k row sums of the run's scores
};
struct HeadSeries {
  std::vector<double> top_acc;  // opt_i: the k largest A_i(j), j <= i, summed
  std::vector<RunSeries> runs;
};

// Values the report's plots need besides the records.
struct HeadExtras {
  std::map<std::string, std::vector<double>> rho;  // per policy, rho_i per step (NaN before eviction)
  std::map<std::string, double> rho_min;
  double gamma_proof = NAN, theta_b = NAN;
  double opt_dyn = NAN;  // C19's OPT_dyn on the offline steps, once solved (a sweep cell of the same budget reads it)
};

class StepCheck {
 public:
  virtual ~StepCheck() = default;
  virtual void step(const HeadStep& /*s*/) {}
  virtual void finish(const HeadSeries& series, std::vector<CheckRecord>& out, HeadExtras& extras) = 0;
};

// The steps the sampled checks act at: o.sampled_steps evenly spaced over the single-eviction
// steps from max(P, 1) on of h2o-paper's run (else the first run) for the small-ground checks, and
// 4 evenly spaced eviction steps of h2o-paper's run for C5 and C12.
struct SampledSteps {
  std::vector<int> small_ground, scores;
  bool operator==(const SampledSteps&) const = default;
};
SampledSteps sampled_steps(const HeadInfo& h, const std::vector<std::vector<int>>& evicted,
                           const TraceChecksOptions& o);

// A test hook: edits step i's rows, records and scores before the checks see them (a corrupted
// record is also the next step's `prev`).
struct StepEdit {
  int i = 0;
  std::vector<double>& a;
  std::vector<double>& acc;
  std::vector<StepRecord>& cur;              // per run
  std::vector<std::vector<double>>& scores;  // per run (empty: none)
};
using Tamper = std::function<void(StepEdit&)>;

// The sweep cell of one head at one budget: each policy's retained mass sum_i a_i(S_i) / n, the
// static optimum's and OPT_dyn's (on the first o.offline_tokens steps).
struct SweepCell {
  std::vector<double> policy;
  double stat = 0.0, dyn = 0.0;
};

struct HeadResult {
  std::vector<CheckRecord> records;
  HeadExtras extras;
  std::vector<std::vector<int>> evicted;  // per run, tokens evicted at each step
  SampledSteps sampled;
  int passes = 1;                  // 2 when the sampled steps were mispredicted
  std::optional<SweepCell> sweep;  // with sweep_cell: the sweep cell at the head's own budget
};
// Runs the checks of `o` on one head in one pass (a second pass only when the sampled steps were
// mispredicted). sweep_cell: also the sweep's cell at o's budget, from the same pass and the same
// offline solve (the values sweep_head(trace, layer, head, o) gives, bit for bit).
HeadResult check_head(const Trace& trace, int layer, int head, const TraceChecksOptions& o,
                      const Tamper& tamper = nullptr, bool sweep_cell = false);

// The steps C19, D10 and the sweep's OPT_dyn solve the offline problem on: min(n, o.offline_tokens),
// or all n when offline_tokens is 0.
int offline_steps(const HeadInfo& h, const TraceChecksOptions& o);

SweepCell sweep_head(const Trace& trace, int layer, int head, const TraceChecksOptions& o);

// `count` evenly spaced picks from `steps` (the t-th at (2t + 1) / (2 count) of the way), without
// repeats; empty when `steps` is.
std::vector<int> evenly_spaced(const std::vector<int>& steps, int count);

// A record tied to this head.
CheckRecord head_record(const HeadInfo& h, const std::string& id, const std::string& variant, ClaimKind kind,
                        bool holds, double metric, long step = -1);

// The sum of w over a set of tokens.
template <class W>
double sum_over(const W& w, const std::vector<int>& set) {
  double s = 0.0;
  for (int j : set) s += w[static_cast<size_t>(j)];
  return s;
}

// The checks, one factory per topic file.
std::unique_ptr<StepCheck> invariants_check(const HeadInfo& h, const TraceChecksOptions& o);     // C1, C27
std::unique_ptr<StepCheck> normalisation_check(const HeadInfo& h, const TraceChecksOptions& o);  // C2, D2
std::unique_ptr<StepCheck> scores_check(const HeadInfo& h, const TraceChecksOptions& o);         // C3, C4
std::unique_ptr<StepCheck> scores_sampled_check(const HeadInfo& h, const TraceChecksOptions& o,
                                                const std::vector<int>& steps);               // C5, C12
std::unique_ptr<StepCheck> udc_check(const HeadInfo& h, const TraceChecksOptions& o);         // C10, C11, D5, C15 hyp.
std::unique_ptr<StepCheck> induction_check(const HeadInfo& h, const TraceChecksOptions& o);   // C13, C14, D6-D8
std::unique_ptr<StepCheck> robustness_check(const HeadInfo& h, const TraceChecksOptions& o);  // C9
std::unique_ptr<StepCheck> ratio_check(const HeadInfo& h, const TraceChecksOptions& o);       // C15
std::unique_ptr<StepCheck> small_ground_check(const HeadInfo& h, const TraceChecksOptions& o,
                                              const std::vector<int>& steps);  // C6-C8, C16, C20-C22, D11
std::unique_ptr<StepCheck> attention_stats_check(const HeadInfo& h, const TraceChecksOptions& o);     // C17, C18, E1
std::unique_ptr<StepCheck> offline_check(const HeadInfo& h, const TraceChecksOptions& o);             // C19, D10
std::unique_ptr<StepCheck> algorithm_variants_check(const HeadInfo& h, const TraceChecksOptions& o);  // D1, D3, D4
std::unique_ptr<StepCheck> empirical_check(const HeadInfo& h, const TraceChecksOptions& o);           // E2, E3
// Where the other papers' claims that speak of a prompt and of generation split a head: m = P,
// else n/2 (as C17), and a window of min(window, m / 2) steps just before m.
struct PromptSplit {
  int m = 0, window = 0;
};
inline PromptSplit prompt_split(const HeadInfo& h, int window) {
  const int m = h.prompt_len > 0 ? h.prompt_len : h.n / 2;
  return {m, std::min(window, m / 2)};
}
// Other papers' claims on one head (ADA1-ADA3 need a whole layer: adakv_layer.hpp).
std::unique_ptr<StepCheck> snapkv_check(const HeadInfo& h, const TraceChecksOptions& o);        // SNAP1
std::unique_ptr<StepCheck> sinks_check(const HeadInfo& h, const TraceChecksOptions& o);         // SINK1
std::unique_ptr<StepCheck> persistence_check(const HeadInfo& h, const TraceChecksOptions& o);   // SCIS1
std::unique_ptr<StepCheck> tova_premise_check(const HeadInfo& h, const TraceChecksOptions& o);  // TOVA1

// C19 and D10 on a given solution of the head's problem (offline_check solves it first); returns
// OPT_dyn, the schedule's value (evaluated here when `opt` was left unevaluated).
double check_offline_solution(const HeadInfo& h, const WeightRows& w, int budget, const OfflineSolution& opt,
                              const std::vector<ScheduleRun>& runs, const TraceChecksOptions& o,
                              std::vector<CheckRecord>& out);

// The (1 - theta) and (1 - gamma) factors of the induction: UDC2's gamma of a per-step optimum
// series in both directions.
struct Gamma {
  double def = 0.0, proof = 0.0;
  long def_step = -1, proof_step = -1;
  std::vector<double> proof_at;  // per step
};
Gamma gammas(const std::vector<double>& opt, int from);

// s0 = max(k, P - 1): the first step under budget pressure; thr = alpha / (10 n) at the most
// lenient alpha.
inline int pressure_step(const HeadInfo& h) { return std::max(h.k(), h.prompt_len - 1); }
inline double udc_threshold(const HeadInfo& h) { return 1.0 / (10.0 * h.n); }
// First step of a run with exactly one eviction after the prompt (the induction's base step).
int base_step(const RunSeries& run, int prompt_len);

}  // namespace kvo::detail
