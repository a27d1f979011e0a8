// Internal: what the per-head claim checks share for one (layer, query head) of a trace: the
// dense attention a, the accumulated dense scores A_i(j), and each policy's replay with its own
// score array snapshotted after every step (h2o, h2o-paper).
#pragma once
#include <Eigen/Dense>
#include <map>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "kvo/checks/check_options.hpp"
#include "kvo/checks/competitive.hpp"
#include "kvo/checks/report.hpp"
#include "kvo/core/attention.hpp"
#include "kvo/core/replay.hpp"

namespace kvo::detail {

inline constexpr double kLine = 1.0 - 1.0 / std::numbers::e;  // the (1 - 1/e) line

struct PolicyRun {
  PolicyId id = PolicyId::H2O;
  std::string name;
  bool nested = true;
  HeadReplay replay;
  // scores(i, j): the policy's score of token j after step i (õ for h2o-paper, the accumulated
  // attention for h2o); empty for the other policies.
  Eigen::MatrixXd scores;
  // First step with an eviction (-1: none).
  int first_eviction() const;
};

struct HeadData {
  const Trace* trace = nullptr;
  int layer = 0, head = 0, n = 0, prompt_len = 0;
  ResolvedBudget budget;
  std::optional<HeadView> view;
  Eigen::MatrixXd a;    // dense causal attention a(i, j), j <= i
  Eigen::MatrixXd acc;  // A_i(j) = sum_{r=j..i} a(r, j) at row i
  std::vector<PolicyRun> runs;
  const PolicyRun* run(PolicyId id) const;  // nullptr when not replayed
  int k() const { return budget.total; }
};

// light: kept sets only (no probabilities, no score snapshots, no accumulated matrix), for sweeps.
HeadData build_head(const Trace& trace, int layer, int head, const TraceChecksOptions& o, bool light = false);

// Per-head values the plots need besides the records.
struct HeadExtras {
  std::map<std::string, std::vector<double>> rho;  // per policy, rho_i per step (NaN before eviction)
  std::map<std::string, double> rho_min;
  double gamma_proof = NAN, theta_b = NAN;
};

// `count` evenly spaced picks from `steps` (the t-th at (2t + 1) / (2 count) of the way), without
// repeats; empty when `steps` is.
std::vector<int> evenly_spaced(const std::vector<int>& steps, int count);
// The steps at which a run evicted something.
std::vector<int> eviction_steps(const PolicyRun& run);
// The sampled steps of the small-ground checks: o.sampled_steps evenly spaced over the run's
// single-eviction steps from max(P, 1) on.
std::vector<int> small_ground_steps(const HeadData& h, const PolicyRun& run, const TraceChecksOptions& o);

// A record tied to this head.
CheckRecord head_record(const HeadData& h, const std::string& id, const std::string& variant, ClaimKind kind,
                        bool holds, double metric, long step = -1);

// Topic files (each appends records for one head).
void check_invariants(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out);     // C1, C27
void check_normalisation(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out);  // C2, D2
void check_scores(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out);  // C3, C4, C5, C12
// The trajectory checks take what they share, computed once (trajectory.hpp).
struct Trajectory;
void check_udc(const HeadData& h, const Trajectory& traj, const TraceChecksOptions& o, std::vector<CheckRecord>& out,
               HeadExtras& extras);  // C10, C11, D5
void check_induction(const HeadData& h, const Trajectory& traj, const TraceChecksOptions& o,
                     std::vector<CheckRecord>& out);  // C13, C14, D6-D8
void check_robustness(const HeadData& h, const Trajectory& traj, const TraceChecksOptions& o,
                      std::vector<CheckRecord>& out);  // C9
void check_ratio(const HeadData& h, const Trajectory& traj, const TraceChecksOptions& o, std::vector<CheckRecord>& out,
                 HeadExtras& extras);  // C15
void check_small_ground(const HeadData& h, const TraceChecksOptions& o,
                        std::vector<CheckRecord>& out);  // C6-C8, C16, C20-C22, D11
void check_attention_stats(const HeadData& h, const TraceChecksOptions& o,
                           std::vector<CheckRecord>& out);                                          // C17, C18
void check_offline(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out);  // C19, D10
// C19 and D10 on a given solution of the head's problem (check_offline solves it first).
void check_offline_solution(const HeadData& h, const OfflineProblem& p, const OfflineSolution& opt,
                            const std::vector<ScheduleRun>& runs, const TraceChecksOptions& o,
                            std::vector<CheckRecord>& out);
void check_algorithm_variants(const HeadData& h, const TraceChecksOptions& o,
                              std::vector<CheckRecord>& out);  // D1, D3, D4

}  // namespace kvo::detail
