#include "kvo/studies/task_comparisons.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "kvo/core/error.hpp"
#include "kvo/studies/paired_power.hpp"

namespace kvo::studies {
namespace {

// (row, budget) -> instance -> outcome, and the (row, budget) pairs in outcome order.
struct OutcomeIndex {
  std::map<std::pair<std::string, double>, std::map<std::string, const TaskOutcome*>> by_row;
  std::vector<std::pair<std::string, double>> order;
  std::vector<std::string> tasks;

  explicit OutcomeIndex(const TaskEvalResult& r) {
    for (const TaskOutcome& o : r.outcomes) {
      const std::pair<std::string, double> key{o.row, o.row == kFullCacheRow ? 1.0 : o.budget};
      auto [it, fresh] = by_row.try_emplace(key);
      if (fresh) order.push_back(key);
      it->second[o.instance] = &o;
      if (std::find(tasks.begin(), tasks.end(), o.task) == tasks.end()) tasks.push_back(o.task);
    }
  }
};

TaskComparison compare(const OutcomeIndex& index, std::string_view row, double budget, std::string_view against,
                       double against_budget, std::string_view task, const TaskComparisonPlan& plan) {
  TaskComparison c;
  c.task = task;
  c.row = row;
  c.against = against;
  c.budget = row == kFullCacheRow ? 1.0 : budget;
  c.against_budget = against == kFullCacheRow ? 1.0 : against_budget;
  const auto a = index.by_row.find({c.row, c.budget});
  const auto b = index.by_row.find({c.against, c.against_budget});
  require(a != index.by_row.end(), "compare rows: no outcomes of row " + c.row + " at budget " + fmt(c.budget, 4));
  require(b != index.by_row.end(),
          "compare rows: no outcomes of row " + c.against + " at budget " + fmt(c.against_budget, 4));
  double sum_a = 0.0, sum_b = 0.0;
  for (const auto& [instance, oa] : a->second) {
    const auto ob = b->second.find(instance);
    if (ob == b->second.end() || (!task.empty() && oa->task != task)) continue;
    ++c.instances;
    sum_a += oa->score;
    sum_b += ob->second->score;
    if (oa->score > ob->second->score) ++c.better;
    if (oa->score < ob->second->score) ++c.worse;
  }
  require(c.instances > 0, "compare rows: " + c.row + " and " + c.against + " share no instance" +
                               (task.empty() ? std::string() : " of task " + std::string(task)));
  const double n = c.instances;
  c.score = sum_a / n;
  c.against_score = sum_b / n;
  c.difference = c.score - c.against_score;
  c.p_value = sign_test_p(c.better, c.worse);
  c.discordance = (c.better + c.worse) / n;
  c.instances_for_power = instances_for_power(std::max(c.discordance, plan.difference), plan.difference, plan.alpha,
                                              plan.power, plan.max_instances);
  return c;
}

bool is_reference(const std::string& row) { return row == kPrefillOptimumRow || row == kTopKRow; }

}  // namespace

TaskComparison compare_task_rows(const TaskEvalResult& r, std::string_view row, double budget, std::string_view against,
                                 double against_budget, std::string_view task, const TaskComparisonPlan& plan) {
  return compare(OutcomeIndex(r), row, budget, against, against_budget, task, plan);
}

std::vector<TaskComparison> task_comparisons(const TaskEvalResult& r, const TaskComparisonPlan& plan) {
  const OutcomeIndex index(r);
  const std::pair<std::string, double> full{std::string(kFullCacheRow), 1.0};
  if (!index.by_row.contains(full)) return {};
  std::vector<std::string> scopes = {""};
  if (index.tasks.size() > 1) scopes.insert(scopes.end(), index.tasks.begin(), index.tasks.end());
  std::vector<TaskComparison> out;
  for (const std::string& task : scopes)
    for (const auto& [row, budget] : index.order) {
      if (row == kFullCacheRow) continue;
      out.push_back(compare(index, row, budget, kFullCacheRow, 1.0, task, plan));
      if (is_reference(row)) continue;
      for (const std::string_view ref : {kPrefillOptimumRow, kTopKRow})
        if (index.by_row.contains({std::string(ref), budget}))
          out.push_back(compare(index, row, budget, ref, budget, task, plan));
    }
  return out;
}

nlohmann::json task_comparisons_json(const std::vector<TaskComparison>& cs) {
  nlohmann::json a = nlohmann::json::array();
  for (const TaskComparison& c : cs)
    a.push_back({{"task", c.task},
                 {"row", c.row},
                 {"budget", c.budget},
                 {"against", c.against},
                 {"against_budget", c.against_budget},
                 {"instances", c.instances},
                 {"better", c.better},
                 {"worse", c.worse},
                 {"score", c.score},
                 {"against_score", c.against_score},
                 {"difference", c.difference},
                 {"p_value", c.p_value},
                 {"discordance", c.discordance},
                 {"instances_for_power", c.instances_for_power}});
  return a;
}

void add_task_comparisons(Report& rep, const std::vector<TaskComparison>& cs, const TaskComparisonPlan& plan) {
  if (cs.empty()) return;
  rep.line(
      "Paired comparisons on the same instances (every task together): better / worse counts the instances "
      "where the row scores above / below the other; p: exact two-sided sign test on them (McNemar's for 0/1 "
      "scores); needed: the instances that find a difference of " +
      fmt(plan.difference, 3) + " significant (p < " + fmt(plan.alpha, 4) + ") with power " + fmt(plan.power, 3) +
      " at the disagreement seen here.");
  Table& t = rep.table(
      {"row", "budget", "against", "n", "score", "other", "difference", "better / worse", "p", "disagree", "needed"});
  for (const TaskComparison& c : cs) {
    if (!c.task.empty()) continue;
    t.row(
        {c.row, decimal(c.budget, 3),
         c.against == kFullCacheRow ? c.against : c.against + " " + fmt(c.against_budget, 3), integer(c.instances),
         decimal(c.score, 3), decimal(c.against_score, 3), decimal(c.difference, 3),
         std::to_string(c.better) + " / " + std::to_string(c.worse), decimal(c.p_value, 4), decimal(c.discordance, 3),
         c.instances_for_power > 0 ? integer(c.instances_for_power) : Cell("> " + std::to_string(plan.max_instances))});
  }
}

}  // namespace kvo::studies
