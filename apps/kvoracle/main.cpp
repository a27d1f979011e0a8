// kvoracle: checks, on attention traces, whether greedy KV-cache eviction is as good as theory says.
#include <CLI/CLI.hpp>
#include <iostream>
#include <map>

#include "commands.hpp"
#include "kvo/core/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"kvoracle: greedy KV-cache eviction against exact oracles on attention traces"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kvoracle 0.1.0");
  // Bad input: one line on stderr, no usage dump.
  app.failure_message(
      [](const CLI::App*, const CLI::Error& e) { return "kvoracle: error: " + std::string(e.what()) + "\n"; });
  kvo::cli::Global g;
  app.add_option("--threads,-j", g.threads, "worker threads (default: all cores)");
  app.add_flag("--quiet,-q", g.quiet, "no progress bar");
  std::map<CLI::App*, kvo::cli::Runner> runners;
  auto reg = [&](kvo::cli::Runner (*add)(CLI::App&, const kvo::cli::Global&)) {
    const size_t before = app.get_subcommands({}).size();
    auto run = add(app, g);
    runners[app.get_subcommands({})[before]] = run;
  };
  reg(kvo::cli::add_synth);
  reg(kvo::cli::add_replay);
  reg(kvo::cli::add_oracle);
  reg(kvo::cli::add_verify);
  reg(kvo::cli::add_policies);
  reg(kvo::cli::add_record);
  reg(kvo::cli::add_generate);
  reg(kvo::cli::add_perplexity);
  reg(kvo::cli::add_eval);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto* sub : app.get_subcommands()) return runners.at(sub)();
  } catch (const kvo::Error& e) {
    std::cerr << "kvoracle: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvoracle: error: " << e.what() << '\n';
    return 3;
  }
  return 0;
}
