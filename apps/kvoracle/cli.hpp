// The kvoracle command line: every subcommand registered on one CLI11 app. main() runs it; the
// argument fuzzer (fuzz/fuzz_cli.cpp) parses with it without running anything.
#pragma once
#include <CLI/CLI.hpp>
#include <map>

#include "commands.hpp"

namespace kvo::cli {

struct Cli {
  Cli();
  Cli(const Cli&) = delete;
  Cli& operator=(const Cli&) = delete;
  CLI::App app{"kvoracle: greedy KV-cache eviction against exact oracles on attention traces"};
  Global global;
  std::map<CLI::App*, Runner> runners;  // the chosen subcommand's runner, after app.parse
};

// Parses argv and runs the chosen subcommand: bad input is one line on stderr and exit status 2
// (kvo::Error) or CLI11's code (argument errors); 0 on success. Under mpirun/srun rank 0 alone
// prints errors, tables and progress; commands that do not spread work over ranks run on rank 0.
int run_cli(int argc, const char* const* argv);
// Whether the parsed subcommand spreads work units over every MPI rank (scaleout/plan_runner.hpp):
// verify, replay (not with --device), tasks run and the offline and contract oracles; the others
// run on rank 0 alone.
bool distributed_command(const CLI::App* sub);

}  // namespace kvo::cli
