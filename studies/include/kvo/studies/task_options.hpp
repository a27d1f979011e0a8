// The one schema of `kvoracle tasks` options: each option's name (the Python keyword and JSON
// key), CLI flag, help, whether it shapes the suite or the run, and how its text sets the requests.
// The CLI's flags, Python's keywords and their defaults are all generated from it. The policies'
// parameters come from run_options_schema(), the presses' from press_parameters_schema().
#pragma once

#include "kvo/core/field_schema.hpp"
#include "kvo/core/run_options.hpp"
#include "kvo/studies/task_eval.hpp"
#include "kvo/studies/tasks.hpp"

namespace kvo::studies {

struct TaskOptions {
  TaskSuiteRequest suite;  // what `tasks generate` (and `tasks run` without instances) builds
  TaskEvalRequest run;     // how `tasks run` answers; run.run and run.press come from the two below
  RunOptions policy;       // the policies' parameters, the budget's recent part, the seed
  PressOptions press;      // the presses' parameters

  // `run` with its run configuration built from `policy` (shared budgets allowed) and `press`,
  // validated; kvo::Error naming the option at fault.
  TaskEvalRequest eval_request() const;
};

// The options that shape the suite (`tasks generate` takes them alone) and those of the run.
inline constexpr const char* kSuiteUse = "suite";
inline constexpr const char* kRunUse = "run";

// Every option once: name, flag, help, use (Suite or Run, FieldInfo::use) and its text and JSON;
// the policies' parameters (run_options_schema(), JSON "policy") and the presses' (JSON "press")
// are flat on the CLI and in Python, of use Run.
const Schema<TaskOptions>& task_options_schema();

}  // namespace kvo::studies
