// What the commands that spread work over MPI ranks share (verify, replay, oracle --offline):
// steps whose failure every rank must learn of, the checkpoint of a run, and running a plan's
// units through scaleout::run_units with rank 0's progress bar.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/progress.hpp"
#include "kvo/scaleout/checkpoint.hpp"
#include "kvo/scaleout/plan_runner.hpp"
#include "kvo/scaleout/team.hpp"

namespace kvo::cli {

// Runs `step` on this rank; when it throws kvo::Error on any rank, every rank learns it and the
// error is reported once by rank 0 (scaleout::Team::agree). `prefix` goes before messages that do not
// already contain it (the trace a step was reading).
void on_every_rank(const std::function<void()>& step, const std::string& prefix = "");

// Rank 0 opens `dir` as the run's checkpoint (nothing when `dir` is empty): its identity is the
// command, its options except `outputs`, and the sha256 of every trace. Every rank learns a refusal.
std::unique_ptr<scaleout::Checkpoint> open_checkpoint(const std::string& dir, const CLI::App* cmd,
                                                      const std::vector<std::string>& outputs,
                                                      const std::vector<std::string>& traces);

// Runs a work plan over the team (scaleout::run_plan) with a progress bar on rank 0: the assembled
// result on rank 0, nothing on the other ranks.
template <class Result>
std::optional<Result> run_plan(const WorkPlan<Result>& plan, const std::string& section, const std::string& label,
                               int threads, bool quiet, const scaleout::Checkpoint* checkpoint) {
  Progress bar(label, plan.size(), !quiet);
  std::optional<Result> out = scaleout::run_plan(plan, {section, threads, checkpoint, [&bar] { bar.tick(); }});
  bar.finish();
  return out;
}

}  // namespace kvo::cli
