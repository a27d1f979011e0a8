// The one option table of the commands that run policies: the policy parameters, the budget and
// the shared run options, registered the same way on every such command (replay, oracle, verify,
// eval) and parsed into one validated kvo::RunConfig.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/run_options.hpp"
#include "kvo/core/safetensors.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {

// What a command takes from the run-option table (kvo/core/run_options.hpp). Commands that replay a
// trace take everything; eval, which decodes a text, takes no trace selection (layers, heads, GQA
// mode, prompt) and gives its budgets as a list (--budgets) in place of --budget.
struct RunOptionSet {
  bool budget_total = true;     // --budget
  bool trace_selection = true;  // --gqa, --prompt-len, --layers, --heads
};

// The run options of one command: `values` holds the defaults (a command may change one, as
// oracle does for the objective, before registering); the flags' texts are parsed after the
// command line by the library's one parser, so errors name the option as Python would.
struct RunArgs {
  RunOptions values;
  SchemaFlags given;  // the texts typed

  RunOptions options() const;  // values with every given text applied (kvo::Error naming the option)
  RunConfig build(PolicyId policy, const Trace* trace = nullptr) const { return options().build(policy, trace); }
};

void add_run_options(CLI::App* cmd, RunArgs& a, RunOptionSet set = {});

// --dtype of the commands that write traces: f32, f16 or bf16 (one option, one mapping).
void add_trace_dtype_option(CLI::App* cmd, std::string& dtype);
DType trace_dtype(const std::string& dtype);

// Every option of `cmd` and its value (given or default) except those named in `skip` (outputs,
// which do not change results): the arguments part of a checkpoint's identity.
nlohmann::json option_values(const CLI::App* cmd, const std::vector<std::string>& skip);

}  // namespace kvo::cli
