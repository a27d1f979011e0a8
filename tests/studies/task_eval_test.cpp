// Task accuracy runs on tiny instances: every row that keeps everything answers as the full cache
// does (both protocols), evicting rows hold at most their budget, needles are tracked, cells and
// Wilson intervals summarise them, and bad requests are refused before any decoding.
#include "kvo/studies/task_eval.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "kvo/core/error.hpp"
#include "kvo/oracle/prefill_oracle.hpp"
#include "kvo/studies/task_io.hpp"
#include "model_fixture.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::model;
using namespace kvo::studies;

namespace {

std::vector<TaskInstance> tiny(int count = 2) {
  TaskSuiteRequest r;
  r.tasks = {TaskId::Passkey};
  r.lengths = {256};
  r.depths = {0.5};
  r.per_cell = count;
  return generate_tasks(test::tiny_model().tokenizer(), r);
}

}  // namespace

TEST(TaskEval, StreamingRowsKeepTheirBudgetAndFullKeepsTheFullAnswer) {
  const auto& m = test::tiny_model();
  const auto inst = tiny(1);
  TaskEvalRequest r;
  r.policies = {PolicyId::Full, PolicyId::H2O, PolicyId::Window};
  r.budgets = {0.25};
  const TaskEvalResult res = evaluate_tasks(m, inst, r);
  ASSERT_EQ(res.outcomes.size(), inst.size() * 5);  // the full cache, three policies, the oracle top-k
  for (size_t i = 0; i < inst.size(); ++i) {
    const TaskOutcome& full = res.outcomes[i * 5];
    EXPECT_EQ(full.row, kFullCacheRow);
    EXPECT_EQ(res.outcomes[i * 5 + 1].row, policy_name(PolicyId::Full));
    EXPECT_EQ(res.outcomes[i * 5 + 1].answer, full.answer);  // the layered path, nothing evicted
    EXPECT_EQ(full.mass_of_optimum, 1.0);
    EXPECT_NEAR(res.outcomes[i * 5 + 1].mass_of_optimum, 1.0, 1e-12);  // everything held
    for (int x = 2; x < 4; ++x) {
      const TaskOutcome& o = res.outcomes[i * 5 + static_cast<size_t>(x)];
      EXPECT_LE(o.kept, std::floor(0.25 * o.input_tokens) + 1e-9);
      EXPECT_GE(o.needles_held, 0.0);
      EXPECT_LE(o.needles_held, 1.0);
      EXPECT_GT(o.mass_of_optimum, 0.0);
      EXPECT_LE(o.mass_of_optimum, 1.0 + 1e-12);  // no set of the budget beats the optimum
    }
    const TaskOutcome& topk = res.outcomes[i * 5 + 4];
    EXPECT_EQ(topk.row, kTopKRow);
    EXPECT_EQ(topk.kept, std::floor(0.25 * topk.input_tokens));
    EXPECT_EQ(topk.needles_held, 1.0);  // nothing is evicted
    EXPECT_TRUE(std::isnan(topk.mass_of_optimum));
  }
  // Heavy hitters hold more of the question's mass than the recent window alone.
  EXPECT_GT(res.outcomes[2].mass_of_optimum, res.outcomes[3].mass_of_optimum);
  // A window of a quarter of the input cannot hold a needle at half depth when the question comes.
  EXPECT_EQ(res.outcomes[3].needles_held, 0.0);
}

TEST(TaskEval, PrefillRowsAtTheWholeContextAnswerAsTheFullCache) {
  const auto& m = test::tiny_model();
  const auto inst = tiny(1);
  TaskEvalRequest r;
  r.protocol = TaskProtocol::Prefill;
  r.policies = {PolicyId::H2O};
  r.presses = {PressId::SnapKV, PressId::Knorm};
  r.budgets = {1.0, 0.3};
  const TaskEvalResult res = evaluate_tasks(m, inst, r);
  ASSERT_EQ(res.outcomes.size(), 1u + 4 * 2);
  const TaskOutcome& full = res.outcomes[0];
  for (const TaskOutcome& o : res.outcomes) {
    SCOPED_TRACE(o.row + " at " + std::to_string(o.budget));
    if (o.budget == 1.0) {
      EXPECT_EQ(o.answer, full.answer);
      EXPECT_EQ(o.needles_held, 1.0);
    }
    if (o.row == kPrefillOptimumRow) {
      EXPECT_NEAR(o.mass_of_optimum, 1.0, 1e-12);  // its own objective
    }
    EXPECT_LE(o.mass_of_optimum, 1.0 + 1e-12);
  }
  // The optimum at 30% keeps the needle wherever the question and answer look at it.
  const auto cells = summarize_tasks(res);
  ASSERT_FALSE(cells.empty());
  EXPECT_EQ(cells[0].row, kFullCacheRow);
  // The saved JSON reads back to the same outcomes and cells (tasks report).
  const TaskEvalResult back = task_result_from_json(task_result_json(res), "test");
  EXPECT_EQ(task_result_json(back).dump(), task_result_json(res).dump());
  nlohmann::json bad = task_result_json(res);
  bad["outcomes"][1].erase("score");
  try {
    task_result_from_json(bad, "r.json");
    ADD_FAILURE() << "a missing score was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "r.json outcome 2: no \"score\"");
  }
}

// Issue 33: the optimum's rows under shared budgets: one row per scope and budget, the same total
// as per-head budgets (mean kept k), the whole context at budget 1; refused under streaming.
TEST(TaskEval, PrefillOptimumRowsPerBudgetScope) {
  const auto& m = test::tiny_model();
  const auto inst = tiny(1);
  TaskEvalRequest r;
  r.protocol = TaskProtocol::Prefill;
  r.policies = {};
  r.budgets = {1.0, 0.3};
  r.optimum_scopes = {BudgetScope::Head, BudgetScope::Model};
  EXPECT_EQ(task_eval_units(1, r), 1 + 2 * 2);
  const TaskEvalResult res = evaluate_tasks(m, inst, r);
  ASSERT_EQ(res.outcomes.size(), 1u + 2 * 2);
  std::vector<std::string> rows;
  for (size_t i = 1; i < res.outcomes.size(); ++i) rows.push_back(res.outcomes[i].row);
  EXPECT_EQ(rows, (std::vector<std::string>{"optimum", "optimum@model", "optimum", "optimum@model"}));
  for (size_t i = 1; i < res.outcomes.size(); ++i) {
    const TaskOutcome& o = res.outcomes[i];
    SCOPED_TRACE(o.row + " at " + std::to_string(o.budget));
    if (o.budget == 1.0) {
      EXPECT_EQ(o.answer, res.outcomes[0].answer);
    }
    EXPECT_NEAR(o.kept, res.outcomes[i < 3 ? 1 : 3].kept, 1e-9);  // the same total as per-head budgets
  }
  r.protocol = TaskProtocol::Streaming;
  r.policies = {PolicyId::H2O};
  EXPECT_NE(test::error_of([&] { r.validate(); }).find("optimum_scopes is read by the prefill protocol only"),
            std::string::npos);
}

TEST(TaskEval, WilsonIntervals) {
  const auto [lo, hi] = wilson_interval(0.5, 10);
  EXPECT_NEAR(lo, 0.2366, 1e-4);
  EXPECT_NEAR(hi, 0.7634, 1e-4);
  const auto [l0, h0] = wilson_interval(0.0, 20);
  EXPECT_EQ(l0, 0.0);
  EXPECT_NEAR(h0, 0.1611, 1e-4);
}

TEST(TaskEval, BadRequestsAreRefused) {
  const auto& m = test::tiny_model();
  const auto inst = tiny(1);
  TaskEvalRequest r;
  r.budgets = {0.0};
  EXPECT_THROW(evaluate_tasks(m, inst, r), Error);
  r = TaskEvalRequest{};
  r.presses = {PressId::SnapKV};  // streaming
  EXPECT_THROW(evaluate_tasks(m, inst, r), Error);
  r = TaskEvalRequest{};
  r.policies = {PolicyId::H2OMask};
  EXPECT_THROW(evaluate_tasks(m, inst, r), Error);
  TaskInstance none = inst[0];
  none.answers.clear();
  EXPECT_THROW(evaluate_tasks(m, std::vector<TaskInstance>{none}, TaskEvalRequest{}), Error);
}

// tova and random are both a policy and a press, which keep different tokens: under the prefill
// protocol the two rows carry the qualified names of every command (two cells, never one), the
// qualified spellings parse, and a row named twice is refused.
TEST(TaskEval, APolicyAndAPressOfOneNameAreTwoRows) {
  TaskEvalRequest r;
  r.protocol = TaskProtocol::Prefill;
  r.presses = parse_press_list("tova,press:random");
  r.policies = parse_policy_list("policy:tova,random,h2o");
  r.budgets = {0.5};
  r.validate();
  EXPECT_EQ(task_row_names(r), (std::vector<std::string>{"press:tova", "press:random", "policy:tova", "policy:random",
                                                         "h2o", std::string(kPrefillOptimumRow)}));
  r.policies = {PolicyId::H2O, PolicyId::H2O};
  EXPECT_THROW(r.validate(), Error);
  r = TaskEvalRequest{};  // streaming: no press, so the bare names are the rows
  r.policies = {PolicyId::Tova, PolicyId::H2O};
  EXPECT_EQ(task_row_names(r), (std::vector<std::string>{"tova", "h2o", std::string(kTopKRow)}));
  EXPECT_THROW(parse_press("policy:tova"), Error);
  EXPECT_THROW(parse_policy("press:tova"), Error);
}

// The offline optimum's row evicts along OPT_dyn of the full cache's trace of the whole instance:
// it holds the budget, and on its own objective (the mass the question's queries give the needle)
// it keeps at least as many units' needles as the window of the same budget.
TEST(TaskEval, OfflineOptimumRowHoldsTheBudget) {
  const auto& m = test::tiny_model();
  const auto inst = tiny(1);
  TaskEvalRequest r;
  r.policies = {PolicyId::Oracle, PolicyId::Window};
  r.budgets = {0.25};
  r.topk = false;
  const TaskEvalResult res = evaluate_tasks(m, inst, r);
  ASSERT_EQ(res.outcomes.size(), 3u);
  const TaskOutcome& oracle = res.outcomes[1];
  EXPECT_EQ(oracle.row, policy_name(PolicyId::Oracle));
  EXPECT_LE(oracle.kept, std::floor(0.25 * oracle.input_tokens) + 1e-9);
  EXPECT_GE(oracle.needles_held, res.outcomes[2].needles_held);
}

TEST(TaskEval, TheTeamRunEqualsTheOneProcessRunRecordForRecord) {
  const auto& m = test::tiny_model();
  const auto inst = tiny(2);
  TaskEvalRequest r;
  r.protocol = TaskProtocol::Prefill;
  r.policies = {PolicyId::H2O};
  r.presses = {PressId::Knorm};
  r.budgets = {0.5};
  r.optimum = false;
  const nlohmann::json one = task_result_json(evaluate_tasks(m, inst, r));
  for (int threads : {2}) {  // (one member runs the same units in order: the one-process call above)
    const std::optional<TaskEvalResult> team = run_tasks(m, inst, r, WorkTeam(threads));
    ASSERT_TRUE(team.has_value());
    EXPECT_EQ(task_result_json(*team), one) << threads << " threads";
  }
  // A bad instance is refused before any unit runs, named as in the one-process call.
  std::vector<TaskInstance> bad = inst;
  bad[1].answers.clear();
  EXPECT_THROW(
      {
        try {
          run_tasks(m, bad, r, WorkTeam(1));
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("has no expected answer"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

TEST(TaskEval, MassOfOptimumIsOneForTheOptimumAndRefusesBadSets) {
  const Trace tr = test::random_trace(2, 4, 2, 40, 8, 11);
  const int context = 24, k = 6;
  std::vector<std::vector<int>> best, first;
  for (int l = 0; l < 2; ++l)
    for (int kv = 0; kv < 2; ++kv) {
      best.push_back(solve_prefill(prefill_unit(tr, l, kv, context, false), k).set);
      std::sort(best.back().begin(), best.back().end());
      first.push_back({0, 1, 2, 3, 4, 5});
    }
  EXPECT_NEAR(mass_of_optimum(tr, context, best, k), 1.0, 1e-12);
  const double m = mass_of_optimum(tr, context, first, k);
  EXPECT_GT(m, 0.0);
  EXPECT_LT(m, 1.0);
  EXPECT_NE(test::error_of([&] {
              mass_of_optimum(tr, context, std::span(first).first(3), k);
            }).find("one kept set per (layer, KV head) of the trace (4), not 3"),
            std::string::npos);
  first[0].push_back(context);
  EXPECT_NE(test::error_of([&] { mass_of_optimum(tr, context, first, k); }).find("outside the context"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { mass_of_optimum(tr, 40, best, k); }).find("must be shorter than the trace"),
            std::string::npos);
}
