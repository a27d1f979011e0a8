// The one option table of the commands that run policies: the policy parameters, the budget and
// the shared run options, registered the same way on every such command (replay, oracle, verify,
// eval) and parsed into one validated kvo::RunConfig.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/run_config.hpp"
#include "kvo/core/safetensors.hpp"

namespace kvo::cli {

// What a command takes from the table. Commands that replay a trace take everything; eval, which
// decodes a text, takes no trace selection (layers, heads, GQA mode, prompt) and gives its budgets
// as a list (--budgets) in place of --budget.
struct RunOptionSet {
  bool budget_total = true;     // --budget
  bool trace_selection = true;  // --gqa, --prompt-len, --layers, --heads
};

struct RunArgs {
  // policy parameters
  int sinks = 4;
  int history = 32;
  std::string objective = "acc";
  std::string h = "id";
  int window = 16;
  double alpha = 0.5;
  // budget
  std::string budget = "20%";
  std::string recent;  // empty: half the budget
  std::vector<std::string> overrides;
  // run
  std::string gqa = "query";
  std::optional<int> prompt_len;  // default: the trace's prompt_len metadata
  unsigned long long seed = 0;
  std::vector<int> layers, heads;

  // The validated configuration of one policy on a trace (the prompt length defaults to the
  // trace's own); without a trace, the prompt defaults to 0.
  RunConfig build(PolicyId policy, const Trace* trace = nullptr) const;
};

void add_run_options(CLI::App* cmd, RunArgs& a, RunOptionSet set = {});

// --dtype of the commands that write traces: f32, f16 or bf16 (one option, one mapping).
void add_trace_dtype_option(CLI::App* cmd, std::string& dtype);
DType trace_dtype(const std::string& dtype);

// Every option of `cmd` and its value (given or default) except those named in `skip` (outputs,
// which do not change results): the arguments part of a checkpoint's identity.
nlohmann::json option_values(const CLI::App* cmd, const std::vector<std::string>& skip);

// Splits "a,b,c".
std::vector<std::string> split_list(const std::string& s);

}  // namespace kvo::cli
