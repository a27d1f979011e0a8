// What the commands that spread work over MPI ranks share (verify, replay, oracle offline): the
// checkpoint of a run, whose identity is the command and its result-changing options. The work
// itself runs through a scaleout::RankTeam (kvo/scaleout/rank_team.hpp).
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "kvo/scaleout/checkpoint.hpp"
#include "kvo/scaleout/rank_team.hpp"

namespace kvo::cli {

// Rank 0 opens `dir` as the run's checkpoint (nothing when `dir` is empty): its identity is the
// command, its options except `outputs`, and the sha256 of every trace. Every rank learns a refusal.
std::unique_ptr<scaleout::Checkpoint> open_checkpoint(const std::string& dir, const CLI::App* cmd,
                                                      const std::vector<std::string>& outputs,
                                                      const std::vector<std::string>& traces);

}  // namespace kvo::cli
