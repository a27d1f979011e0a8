// Task instances as JSON Lines in kvpress's dataset columns (context, question, answer_prefix,
// answer, max_new_tokens), so kvpress users' data sets run unchanged and anyone can add a task
// without writing C++; and task results as JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "kvo/proofs_check/report.hpp"
#include "kvo/report/report.hpp"
#include "kvo/studies/task_eval.hpp"
#include "kvo/studies/tasks.hpp"

namespace kvo::studies {

// One row: kvpress's columns ("answer": a string or a list of strings), and, when present,
// kvoracle's "id", "task", "length", "depth", "rule" ("all" or "recall") and "needles".
nlohmann::json task_instance_json(const TaskInstance& instance);
// kvo::Error naming the row's problem (a missing context, question or answer, a wrong type).
TaskInstance task_instance_from_json(const nlohmann::json& row, const std::string& where);

// kvo::Error "FILE line N: ..." for a line that is not a JSON object with the required columns.
std::vector<TaskInstance> read_task_jsonl(const std::string& path);
// Atomically (a temporary renamed over the target).
void write_task_jsonl(const std::string& path, const std::vector<TaskInstance>& instances);

// Outcomes as the JSON array of the run's "outcomes" (what an MPI unit or a checkpoint carries).
nlohmann::json task_outcomes_json(std::span<const TaskOutcome> outcomes);
// The paper's closed-loop experiments (E4, E5, E6, E9; kvo/proofs_check/paper_experiments.hpp) on
// the mean score over all instances of each row and budget against the full cache's, under the
// dynamic protocol (none under prefill, whose rows are presses), per shot count: E7 for few-shot
// instances, the others for instances without examples.
std::vector<CheckRecord> task_paper_experiments(const TaskEvalResult& result);
// The run's JSON: the request's protocol and budgets, every outcome, the cells (per task x
// length x row x budget, and per depth) with their Wilson intervals, and the records of
// task_paper_experiments ("paper_experiments"), and the paired comparisons of task_comparisons
// ("comparisons").
nlohmann::json task_result_json(const TaskEvalResult& result);
// The outcomes of that JSON back (cells are recomputed from them): kvo::Error "WHERE: ..." naming
// the first field that is missing or of the wrong type.
TaskEvalResult task_result_from_json(const nlohmann::json& json, const std::string& where);
TaskEvalResult read_task_result(const std::string& path);
// What `tasks run` and `tasks report` show (study_reports.cpp): per task x length x row x budget
// the accuracy with its Wilson interval, the needles held and the mass of the optimum; the paired
// comparisons (task_comparisons.hpp); the paper's
// experiments; and the plots: "accuracy-<task>-<length>.svg" (accuracy against the kept share, one
// line per row) and, for tasks with depths, "depth-<task>-<row>-<budget>.svg" (length x depth).
Report task_report(const TaskEvalResult& result);

}  // namespace kvo::studies
