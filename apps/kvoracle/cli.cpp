#include "cli.hpp"

#include <iostream>

#include "kvo/core/error.hpp"

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
  reg(add_record);
  reg(add_generate);
  reg(add_perplexity);
  reg(add_eval);
}

int run_cli(int argc, const char* const* argv) {
  Cli cli;
  try {
    cli.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.app.exit(e);
  }
  try {
    for (auto* sub : cli.app.get_subcommands()) return cli.runners.at(sub)();
  } catch (const Error& e) {
    std::cerr << "kvoracle: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvoracle: error: " << e.what() << '\n';
    return 3;
  }
  return 0;
}

}  // namespace kvo::cli
