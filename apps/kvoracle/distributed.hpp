// What the commands that spread work over MPI ranks share (verify, replay, oracle --offline):
// steps whose failure every rank must learn of, the checkpoint of a run, and running a plan's
// units through dist::run_units with rank 0's progress bar.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kvo/core/progress.hpp"
#include "kvo/dist/checkpoint.hpp"
#include "kvo/dist/team.hpp"
#include "kvo/dist/unit_runner.hpp"

namespace kvo::cli {

// Runs `step` on this rank; when it throws kvo::Error on any rank, every rank learns it and the
// error is reported once by rank 0 (dist::Team::agree). `prefix` goes before messages that do not
// already contain it (the trace a step was reading).
void on_every_rank(const std::function<void()>& step, const std::string& prefix = "");

// Rank 0 opens `dir` as the run's checkpoint (nothing when `dir` is empty): its identity is the
// command, its options except `outputs`, and the sha256 of every trace. Every rank learns a refusal.
std::unique_ptr<dist::Checkpoint> open_checkpoint(const std::string& dir, const CLI::App* cmd,
                                                  const std::vector<std::string>& outputs,
                                                  const std::vector<std::string>& traces);

// Runs a plan's units over the team with a progress bar on rank 0; returns every unit's bytes on
// rank 0 (empty elsewhere).
struct PlanUnits {
  std::string section = "t0", label;
  int size = 0;
  std::function<std::string(int)> name, run;
  std::function<double(int)> cost;  // default: every unit costs the same
};
std::vector<std::string> run_plan(const PlanUnits& plan, int threads, bool quiet, const dist::Checkpoint* checkpoint);

}  // namespace kvo::cli
