#include "cli.hpp"

#include <iostream>
#include <sstream>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/dist/team.hpp"

namespace kvo::cli {

Cli::Cli() {
  app.require_subcommand(1);
  app.set_version_flag("--version", "kvoracle 0.1.0");
  // Bad input: one line on stderr, no usage dump.
  app.failure_message(
      [](const CLI::App*, const CLI::Error& e) { return "kvoracle: error: " + std::string(e.what()) + "\n"; });
  app.add_option("--threads,-j", global.threads, "worker threads (default: all cores)");
  app.add_flag("--quiet,-q", global.quiet, "no progress bar");
  auto reg = [&](Runner (*add)(CLI::App&, const Global&)) {
    const size_t before = app.get_subcommands({}).size();
    auto run = add(app, global);
    runners[app.get_subcommands({})[before]] = run;
  };
  reg(add_synth);
  reg(add_replay);
  reg(add_oracle);
  reg(add_verify);
  reg(add_policies);
  reg(add_presses);
  reg(add_record);
  reg(add_generate);
  reg(add_perplexity);
  reg(add_eval);
}

int run_cli(int argc, const char* const* argv) {
  Cli cli;
  const dist::Team& team = dist::Team::world();
  try {
    cli.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (team.root()) return cli.app.exit(e);
    std::ostringstream quiet;  // every rank parses the same arguments: rank 0 alone says what is wrong
    return cli.app.exit(e, quiet, quiet);
  }
  CLI::App* sub = cli.app.get_subcommands().front();
  if (team.distributed()) {
    // Commands that spread their units over the ranks run on every rank; the others on rank 0.
    if (!distributed_command(sub->get_name())) {
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
  const bool spread = team.distributed() && distributed_command(sub->get_name());
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
    } catch (const dist::TeamError& e) {
      if (team.root()) say(e.what());
      return team.root() ? status : 0;
    }
    std::cerr << "kvoracle: rank " << team.rank() << ": error: " << what << '\n';
    dist::Session::abort_job(status);
  };
  int code = 0;
  try {
    code = cli.runners.at(sub)();
  } catch (const dist::TeamError& e) {
    if (team.root()) say(e.what());  // every rank knows; rank 0 alone says it and ends the job non-zero
    code = team.root() ? 2 : 0;
  } catch (const Error& e) {
    code = fail(e.what(), 2);
  } catch (const std::exception& e) {
    code = fail(e.what(), 3);
  }
  if (team.distributed() && distributed_command(sub->get_name())) team.barrier();
  return code;
}

bool distributed_command(const std::string& name) { return name == "verify" || name == "replay" || name == "oracle"; }

}  // namespace kvo::cli
