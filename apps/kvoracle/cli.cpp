#include "cli.hpp"

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string_view>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/model/compute_threads.hpp"
#include "kvo/scaleout/team.hpp"
#include "kvo/version.hpp"

namespace kvo::cli {

Cli::Cli() {
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kvoracle ") + kvo::version + " (" + kvo::build_isa + ")");
  // Bad input: one line on stderr, no usage dump.
  app.failure_message(
      [](const CLI::App*, const CLI::Error& e) { return "kvoracle: error: " + std::string(e.what()) + "\n"; });
  app.add_option("--threads,-j", global.threads,
                 "worker threads, the model's matrix products included (default: all cores, under MPI the "
                 "rank's share; the model's follow OMP_NUM_THREADS when it is set)");
  app.add_flag("--quiet,-q", global.quiet, "no progress bar");
  auto reg = [&](Runner (*add)(CLI::App&, const Global&)) {
    const size_t before = app.get_subcommands({}).size();
    auto run = add(app, global);
    runners[app.get_subcommands({})[before]] = run;
  };
  reg(add_synth);
  reg(add_replay);
  reg(add_score);
  reg(add_oracle);
  reg(add_verify);
  reg(add_policies);
  reg(add_presses);
  reg(add_record);
  reg(add_generate);
  reg(add_perplexity);
  reg(add_eval);
  reg(add_tasks);
  reg(add_conformance);
  reg(add_search);
  reg(add_options_markdown);
}

// The first word after the global options, when it names no command: "unknown command 'x'". (CLI11
// alone answers "A subcommand is required", and prints the main help for `kvoracle x --help`.)
std::string unknown_command(const Cli& cli, int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" || arg == "-j") {
      ++i;  // its value
      continue;
    }
    if (arg.empty() || arg[0] == '-') continue;
    std::string known;
    for (const CLI::App* sub : cli.app.get_subcommands({})) {
      if (sub->get_name() == arg) return "";
      if (!sub->get_group().empty()) known += (known.empty() ? "" : ", ") + sub->get_name();  // not the hidden ones
    }
    return "unknown command '" + arg + "' (commands: " + known + ")";
  }
  return "";
}

int run_cli(int argc, const char* const* argv) {
  Cli cli;
  const scaleout::Team& team = scaleout::Team::world();
  if (const std::string why = unknown_command(cli, argc, argv); !why.empty()) {
    if (team.root()) std::cerr << "kvoracle: error: " << why << '\n';
    return 2;
  }
  try {
    cli.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (team.root()) return cli.app.exit(e);
    std::ostringstream quiet;  // every rank parses the same arguments: rank 0 alone says what is wrong
    return cli.app.exit(e, quiet, quiet);
  }
  CLI::App* sub = cli.app.get_subcommands().front();
  const bool spread = team.distributed() && distributed_command(sub);
  // A run in the background (nohup, a study script's log) asks for progress lines by name.
  if (const char* lines = std::getenv("KVO_PROGRESS_LINES"); lines != nullptr && std::string_view(lines) == "1")
    Progress::log_lines_when_piped(true);
  if (team.distributed()) {
    // Commands that spread their units over the ranks run on every rank; the others on rank 0 alone,
    // so no command asks which rank it is on before it prints.
    if (!spread) {
      if (!team.root()) return 0;
    } else {
      if (cli.global.threads <= 0) cli.global.threads = team.default_threads();
      if (team.root()) {
        Progress::log_lines_when_piped(true);
      } else {
        cli.global.quiet = true;  // rank 0 alone shows progress; stdout stays the report's
        quiet_interrupts();
      }
    }
  }
  // The model's matrix products and per-head loops run on OpenMP's threads, left alone one per CPU
  // the process may run on: -j sets them; without it OMP_NUM_THREADS does, or else -j's default (the
  // rank's share of the node's cores), so that the ranks of a node share its cores.
  if (cli.app.count("--threads") > 0 || std::getenv("OMP_NUM_THREADS") == nullptr)
    model::set_compute_threads(cli.global.threads > 0 ? cli.global.threads : team.default_threads());
  auto say = [&](const std::string& what) { std::cerr << "kvoracle: error: " << what << '\n'; };
  auto fail = [&](const std::string& what, int status) {
    if (!spread) {
      say(what);
      return status;
    }
    // The other ranks most often fail in the same way (same arguments, same files): agree on it, so
    // rank 0 prints one line. A rank that fails alone while the others wait elsewhere ends the job.
    try {
      if (team.agree_within(what, 30.0)) return status;  // unreachable: an error was given
    } catch (const scaleout::TeamError& e) {
      if (team.root()) say(e.what());
      return team.root() ? status : 0;
    }
    std::cerr << "kvoracle: rank " << team.rank() << ": error: " << what << '\n';
    scaleout::Session::abort_job(status);
  };
  int code = 0;
  try {
    code = cli.runners.at(sub)();
  } catch (const scaleout::TeamError& e) {
    if (team.root()) say(e.what());  // every rank knows; rank 0 alone says it and ends the job non-zero
    code = team.root() ? 2 : 0;
  } catch (const Error& e) {
    code = fail(e.what(), 2);
  } catch (const std::exception& e) {
    code = fail(e.what(), 3);
  }
  if (spread) team.barrier();
  return code;
}

bool distributed_command(const CLI::App* sub) {
  const std::string name = sub->get_name();
  if (name == "verify") return true;
  if (name == "replay") return sub->count("--device") == 0;  // the greedy scorer runs on one process
  if (name == "oracle")  // the offline and contract oracles; static, prefill and allocation: one process
    return sub->get_subcommand("offline")->parsed() || sub->get_subcommand("contract")->parsed();
  if (name == "tasks") return sub->get_subcommand("run")->parsed();  // generate and report: one process
  return false;
}

}  // namespace kvo::cli
