// The work team of a run started by mpirun/srun (or of one process): every rank runs the plans'
// units (scaleout::run_plan_units, largest first), a checkpoint stores finished units, rank 0 leads
// (gets the results, shows the progress bar, writes the outputs) and a failure on any rank reaches
// every rank (Team::agree).
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/work_team.hpp"
#include "kvo/scaleout/checkpoint.hpp"

namespace kvo::scaleout {

class RankTeam final : public WorkTeam {
 public:
  // threads: worker threads per rank (<= 0: Team::default_threads(), the CPUs this rank may use);
  // progress: rank 0's bar; checkpoint: rank 0's, or none.
  RankTeam(int threads, bool progress, const Checkpoint* checkpoint = nullptr);
  bool leader() const override;
  // Collective: every rank calls it; errors become TeamError on every rank, said once by rank 0.
  void together(const std::function<void()>& step, const std::string& prefix = "") const override;
  std::optional<std::vector<std::string>> run_units(const WorkUnits& plan, const std::string& section,
                                                    const std::string& label) const override;

 private:
  const Checkpoint* checkpoint_;
};

// Collective: rank 0 opens `dir` as the run's checkpoint (nothing when `dir` is empty), its
// identity `identity` plus the sha256 of every trace ("traces_sha256"); every rank learns a refusal.
std::unique_ptr<Checkpoint> open_run_checkpoint(const std::string& dir, nlohmann::json identity,
                                                const std::vector<std::string>& traces);

}  // namespace kvo::scaleout
