// Paired comparisons of a task run's rows: counts, means and the sign test on the instances two
// rows share, per task and over all, the references compared at the same budget, the JSON and the
// report's table, and the refusal of rows with no instance in common.
#include "kvo/studies/task_comparisons.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"
#include "kvo/studies/paired_power.hpp"
#include "kvo/studies/task_io.hpp"

using namespace kvo;
using namespace kvo::studies;

namespace {

TaskOutcome outcome(int instance, const std::string& task, const std::string& row, double budget, double score) {
  TaskOutcome o;
  o.instance = std::string{"i"}.append(std::to_string(instance));
  o.task = task;
  o.row = row;
  o.budget = budget;
  o.score = score;
  return o;
}

// 20 instances, 10 per task: the full cache right on 18; h2o at 0.2 right on 4 (one the full cache
// misses); topk at 0.2 right on 17.
TaskEvalResult streaming_run() {
  TaskEvalResult r;
  for (int i = 0; i < 20; ++i) {
    const std::string task = i < 10 ? "niah" : "passkey";
    r.outcomes.push_back(outcome(i, task, std::string(kFullCacheRow), 1.0, i < 18 ? 1.0 : 0.0));
    r.outcomes.push_back(outcome(i, task, "h2o", 0.2, (i < 3 || i == 19) ? 1.0 : 0.0));
    r.outcomes.push_back(outcome(i, task, std::string(kTopKRow), 0.2, i < 17 ? 1.0 : 0.0));
  }
  return r;
}

const TaskComparison& find(const std::vector<TaskComparison>& cs, const std::string& task, const std::string& row,
                           const std::string& against) {
  for (const TaskComparison& c : cs)
    if (c.task == task && c.row == row && c.against == against) return c;
  throw Error("no comparison " + row + " / " + against + " in " + task);
}

}  // namespace

TEST(TaskComparisons, CountsAndTestsThePairedInstances) {
  const TaskEvalResult r = streaming_run();
  const TaskComparison c = compare_task_rows(r, "h2o", 0.2, kFullCacheRow, 1.0);
  EXPECT_EQ(c.instances, 20);
  EXPECT_EQ(c.better, 1);  // instance 19
  EXPECT_EQ(c.worse, 15);  // 3..17
  EXPECT_DOUBLE_EQ(c.score, 0.2);
  EXPECT_DOUBLE_EQ(c.against_score, 0.9);
  EXPECT_NEAR(c.difference, -0.7, 1e-15);
  EXPECT_DOUBLE_EQ(c.p_value, sign_test_p(1, 15));
  EXPECT_DOUBLE_EQ(c.discordance, 0.8);
  EXPECT_EQ(c.instances_for_power, instances_for_power(0.8, 0.1, 0.01, 0.8, 5000));
  // Per task: niah's 10 (h2o right on 0..2, the full cache on all).
  const TaskComparison niah = compare_task_rows(r, "h2o", 0.2, kFullCacheRow, 1.0, "niah");
  EXPECT_EQ(niah.instances, 10);
  EXPECT_EQ(niah.better, 0);
  EXPECT_EQ(niah.worse, 7);
  // Rows that never disagree plan with the difference as their disagreement.
  const TaskComparison self = compare_task_rows(r, "h2o", 0.2, "h2o", 0.2);
  EXPECT_DOUBLE_EQ(self.p_value, 1.0);
  EXPECT_EQ(self.instances_for_power, instances_for_power(0.1, 0.1, 0.01, 0.8, 5000));
}

TEST(TaskComparisons, EveryRowAgainstTheFullCacheAndTheReference) {
  const std::vector<TaskComparison> cs = task_comparisons(streaming_run());
  // Over all and per task (3 scopes): h2o against the full cache and topk; topk against the full cache.
  EXPECT_EQ(cs.size(), 9U);
  const TaskComparison& ref = find(cs, "", "h2o", std::string(kTopKRow));
  EXPECT_DOUBLE_EQ(ref.against_budget, 0.2);
  EXPECT_EQ(ref.worse, 14);  // 3..16
  EXPECT_EQ(ref.better, 1);
  EXPECT_EQ(find(cs, "passkey", std::string(kTopKRow), std::string(kFullCacheRow)).worse, 1);  // instance 17
  const nlohmann::json j = task_result_json(streaming_run());
  ASSERT_TRUE(j.contains("comparisons"));
  EXPECT_EQ(j["comparisons"].size(), 9U);
  EXPECT_EQ(j["comparisons"][0]["better"], 1);
  const std::string text = task_report(streaming_run()).text();
  EXPECT_NE(text.find("Paired comparisons"), std::string::npos);
  EXPECT_NE(text.find("1 / 15"), std::string::npos);
}

TEST(TaskComparisons, NothingWithoutTheFullCacheAndRefusedWithoutSharedInstances) {
  TaskEvalResult r = streaming_run();
  std::erase_if(r.outcomes, [](const TaskOutcome& o) { return o.row == kFullCacheRow; });
  EXPECT_TRUE(task_comparisons(r).empty());
  EXPECT_THROW(compare_task_rows(r, "h2o", 0.5, kTopKRow, 0.2), Error);  // no h2o at 0.5
  TaskEvalResult apart = streaming_run();
  for (TaskOutcome& o : apart.outcomes)
    if (o.row == "h2o") o.instance += "-other";
  try {
    compare_task_rows(apart, "h2o", 0.2, kFullCacheRow, 1.0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("share no instance"), std::string::npos) << e.what();
  }
}

TEST(TaskComparisons, ThePapersClaimsCarryTheirSignTestsPerShotCount) {
  // Plain instances: h2o (the run's row) against lookahead, right on instances 0..16; few-shot
  // instances (5 shots, their own ids) where h2o misses 2 of 6 the full cache answers.
  TaskEvalResult r = streaming_run();
  for (int i = 0; i < 20; ++i)
    r.outcomes.push_back(outcome(i, i < 10 ? "niah" : "passkey", "lookahead", 0.2, i < 17 ? 1.0 : 0.0));
  for (int i = 0; i < 6; ++i) {
    TaskOutcome full = outcome(100 + i, "niah", std::string(kFullCacheRow), 1.0, 1.0), h2o = full;
    h2o.row = "h2o";
    h2o.budget = 0.2;
    h2o.score = i < 4 ? 1.0 : 0.0;
    full.shots = h2o.shots = 5;
    r.outcomes.push_back(full);
    r.outcomes.push_back(h2o);
  }
  const std::vector<CheckRecord> records = task_paper_experiments(r);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].id, "E5");
  const TaskComparison e5 = compare_task_rows(r, "h2o", 0.2, "lookahead", 0.2);
  const nlohmann::json& p5 = records[0].detail.at("paired").at(0);
  EXPECT_EQ(p5.at("row"), "h2o");
  EXPECT_EQ(p5.at("against"), "lookahead");
  EXPECT_EQ(p5.at("instances"), 20);
  EXPECT_EQ(p5.at("better"), e5.better);
  EXPECT_EQ(p5.at("worse"), e5.worse);
  EXPECT_DOUBLE_EQ(p5.at("p_value").get<double>(), e5.p_value);
  EXPECT_EQ(records[1].id, "E7");  // on the 6 five-shot instances only
  const nlohmann::json& p7 = records[1].detail.at("paired").at(0);
  EXPECT_EQ(p7.at("against"), std::string(kFullCacheRow));
  EXPECT_EQ(p7.at("instances"), 6);
  EXPECT_EQ(p7.at("worse"), 2);
  EXPECT_DOUBLE_EQ(p7.at("p_value").get<double>(), sign_test_p(0, 2));
  const std::string text = task_report(r).text();
  EXPECT_NE(text.find("paired sign tests (p)"), std::string::npos) << text;
  EXPECT_NE(text.find("h2o vs lookahead"), std::string::npos) << text;
}
