// Paired comparisons of a task run's rows on the same instances: each row against the full cache
// and against its protocol's reference (the prefill optimum, the oracle top-k) at the same budget,
// with the exact sign test and the study size that would make a difference of 0.1 significant at
// the disagreement seen (kvo/studies/paired_power.hpp).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kvo/report/report.hpp"
#include "kvo/studies/task_eval.hpp"

namespace kvo::studies {

// The power the "instances for power" column plans for.
struct TaskComparisonPlan {
  double difference = 0.1, alpha = 0.01, power = 0.8;
  int max_instances = 5000;
};

struct TaskComparison {
  std::string task;  // empty: every task together
  std::string row, against;
  double budget = 1.0;          // the row's (the full cache's is 1)
  double against_budget = 1.0;  // the reference's
  int instances = 0;            // answered by both
  int better = 0, worse = 0;    // instances where the row scores above / below the reference
  double score = 0.0, against_score = 0.0, difference = 0.0;  // means over the paired instances
  double p_value = 1.0;                                       // sign_test_p(better, worse)
  double discordance = 0.0;                                   // (better + worse) / instances
  // Instances that give the plan's power against its difference at this discordance (at least the
  // difference); 0 when more than max_instances.
  int instances_for_power = 0;
};

// One comparison: `row` at `budget` against `against` at `against_budget` (kFullCacheRow at 1),
// on the instances of `task` (empty: all) both answered. kvo::Error when the two share no instance.
TaskComparison compare_task_rows(const TaskEvalResult& result, std::string_view row, double budget,
                                 std::string_view against, double against_budget, std::string_view task = {},
                                 const TaskComparisonPlan& plan = {});

// Every row and budget against the full cache, and against the protocol's references at the same
// budget (prefill: "optimum"; streaming: "topk"), over every task together and per task; rows in
// outcome order. Empty without a full cache's row.
std::vector<TaskComparison> task_comparisons(const TaskEvalResult& result, const TaskComparisonPlan& plan = {});

nlohmann::json task_comparisons_json(const std::vector<TaskComparison>& comparisons);
// The table of the comparisons over every task together.
void add_task_comparisons(Report& report, const std::vector<TaskComparison>& comparisons,
                          const TaskComparisonPlan& plan = {});

}  // namespace kvo::studies
