// Registration of the kvoracle subcommands; each returns the callback that runs it.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace kvo::cli {

struct Global {
  int threads = 0;
  bool quiet = false;
};

using Runner = std::function<int()>;
Runner add_synth(CLI::App& app, const Global& g);
Runner add_replay(CLI::App& app, const Global& g);
Runner add_score(CLI::App& app, const Global& g);
Runner add_oracle(CLI::App& app, const Global& g);
Runner add_verify(CLI::App& app, const Global& g);
Runner add_policies(CLI::App& app, const Global& g);
Runner add_presses(CLI::App& app, const Global& g);
Runner add_record(CLI::App& app, const Global& g);
Runner add_generate(CLI::App& app, const Global& g);
Runner add_perplexity(CLI::App& app, const Global& g);
Runner add_eval(CLI::App& app, const Global& g);
Runner add_tasks(CLI::App& app, const Global& g);
Runner add_conformance(CLI::App& app, const Global& g);
Runner add_search(CLI::App& app, const Global& g);
Runner add_options_markdown(CLI::App& app, const Global& g);  // hidden: docs/cli.md's tables

}  // namespace kvo::cli
