// The one table of `kvoracle tasks` options: each option's name (the Python keyword and JSON
// key), CLI flag, help, whether it shapes the suite or the run, and how its text sets the requests.
// The CLI's flags, Python's keywords and their defaults are all generated from it. The policies'
// parameters come from run_option_table(), the presses' from press_parameter_table().
#pragma once
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "kvo/studies/task_eval.hpp"
#include "kvo/studies/tasks.hpp"

namespace kvo::studies {

struct TaskOptions {
  TaskSuiteRequest suite;  // what `tasks generate` (and `tasks run` without instances) builds
  TaskEvalRequest run;     // how `tasks run` answers; run.run's policy parameters are set apart
};

enum class TaskOptionUse { Suite, Run };

struct TaskOptionEntry {
  std::string_view name;   // "per_cell"
  std::string_view flag;   // "--per-cell"
  std::string_view alias;  // a short CLI spelling ("-p"), or empty
  std::string_view help;
  TaskOptionUse use;
  // Non-empty: on the CLI a switch without a value that sets this text ("--no-optimum": "false").
  std::string_view switch_text;
  void (*set)(TaskOptions& options, std::string_view text);  // kvo::Error naming the option
  std::string (*get)(const TaskOptions& options);            // the value as text (help's default)
};

std::span<const TaskOptionEntry> task_option_table();
const TaskOptionEntry* find_task_option(std::string_view name);  // nullptr when unknown
std::string task_option_names(TaskOptionUse use);                // "tasks, lengths, ..." for messages
// The JSON form: every option by name, its text as the value.
nlohmann::json task_options_json(const TaskOptions& options);

}  // namespace kvo::studies
