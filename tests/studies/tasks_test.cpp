// The generated task suite: deterministic, sized in the model's tokens, needles where the cell
// says and found by their tokens, the scoring rules, and refusals in one line each.
#include "kvo/studies/tasks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "kvo/core/error.hpp"
#include "kvo/studies/task_io.hpp"
#include "kvo/studies/task_options.hpp"
#include "model_fixture.hpp"

using namespace kvo;
using namespace kvo::model;
using namespace kvo::studies;

namespace {

TaskSuiteRequest small_suite() {
  TaskSuiteRequest r;
  r.tasks = parse_task_list("all");
  r.lengths = {512};
  r.depths = {0.0, 0.5, 1.0};
  r.per_cell = 2;
  r.seed = 7;
  return r;
}

}  // namespace

TEST(Tasks, GenerationIsDeterministicAndSizedInTokens) {
  const auto& tok = test::tiny_model().tokenizer();
  const auto a = generate_tasks(tok, small_suite()), b = generate_tasks(tok, small_suite());
  ASSERT_EQ(a.size(), b.size());
  // Five tasks with depths (3 depths x 2) and common words (one cell of 2).
  EXPECT_EQ(a.size(), 5u * 3 * 2 + 2);
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].id);
    EXPECT_EQ(a[i].context, b[i].context);
    EXPECT_EQ(a[i].answers, b[i].answers);
    const TaskTokens t = task_tokens(tok, a[i]);
    EXPECT_LE(t.size(), 512);
    EXPECT_GE(t.size(), 400);  // filled to within a sentence or a list entry
    EXPECT_FALSE(a[i].answers.empty());
    std::string said(" ");
    said.append(join_answers(a[i].answers));
    EXPECT_DOUBLE_EQ(score_answer(a[i], said), 1.0);
  }
  TaskSuiteRequest other = small_suite();
  other.seed = 8;
  EXPECT_NE(generate_tasks(tok, other)[0].answers, a[0].answers);
}

TEST(Tasks, NeedleTokensDecodeToTheValueAtTheCellsDepth) {
  const auto& tok = test::tiny_model().tokenizer();
  TaskSuiteRequest r = small_suite();
  r.tasks = {TaskId::Passkey, TaskId::Niah};
  for (const TaskInstance& in : generate_tasks(tok, r)) {
    SCOPED_TRACE(in.id);
    const std::vector<int> ids = tok.encode(in.context);
    ASSERT_EQ(in.needles.size(), 1u);
    const auto [a, b] = in.needles[0];
    const std::string value = tok.decode(std::vector<int>(ids.begin() + a, ids.begin() + b));
    EXPECT_EQ(value, in.answers[0]);  // digits are tokens of their own: no space joins them
    const double where = static_cast<double>(a) / static_cast<double>(ids.size());
    EXPECT_NEAR(where, in.depth, 0.2);  // the header and the needle's own words sit around it
  }
}

TEST(Tasks, ScoringRules) {
  TaskInstance all;
  all.answers = {"12345"};
  EXPECT_EQ(score_answer(all, " 12345."), 1.0);
  EXPECT_EQ(score_answer(all, " 1234"), 0.0);
  TaskInstance recall;
  recall.rule = ScoreRule::Recall;
  recall.answers = {"ALPHA", "beta", "gamma", "delta"};
  EXPECT_DOUBLE_EQ(score_answer(recall, "alpha, Beta and something"), 0.5);
  recall.rule = ScoreRule::All;
  EXPECT_EQ(score_answer(recall, "alpha, Beta and something"), 0.0);
}

TEST(Tasks, BadRequestsAreRefusedInOneLine) {
  const auto& tok = test::tiny_model().tokenizer();
  EXPECT_THROW(parse_task("needle"), Error);
  try {
    parse_task("needle");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown task 'needle' (known: passkey"), std::string::npos);
  }
  TaskSuiteRequest r = small_suite();
  r.lengths = {9000};
  EXPECT_THROW(generate_tasks(tok, r), Error);
  r = small_suite();
  r.depths = {1.5};
  EXPECT_THROW(generate_tasks(tok, r), Error);
  r = small_suite();
  r.haystack_dir = "/nonexistent";
  EXPECT_THROW(generate_tasks(tok, r), Error);
}

// The one option table of `tasks`: every option's text round-trips through its setter, a bad text
// names the option, and the JSON form lists every option once.
// Few-shot: the examples open the input, each a worked instance with its answer written out; the
// instance itself is the 0-shot one, its needle found past the examples at needle_shift; the JSON
// row carries them, and a length plus its shots beyond the model's positions is refused.
TEST(Tasks, ShotsOpenTheInputAndTheNeedleSitsPastThem) {
  const auto& tok = test::tiny_model().tokenizer();
  TaskSuiteRequest r = small_suite();
  r.tasks = {TaskId::Passkey, TaskId::MultiKey};
  r.depths = {0.5};
  r.per_cell = 1;
  const auto plain = generate_tasks(tok, r);
  r.shots = 2;
  const auto shot = generate_tasks(tok, r);
  ASSERT_EQ(shot.size(), plain.size());
  for (size_t i = 0; i < shot.size(); ++i) {
    SCOPED_TRACE(shot[i].id);
    EXPECT_EQ(shot[i].id, plain[i].id + "-s2");
    EXPECT_EQ(shot[i].shots, 2);
    EXPECT_EQ(shot[i].context, plain[i].context);
    EXPECT_EQ(shot[i].answers, plain[i].answers);
    // Two worked answers, neither the instance's own.
    size_t answered = 0;
    for (size_t at = shot[i].examples.find(shot[i].answer_prefix.substr(0, 10)); at != std::string::npos;
         at = shot[i].examples.find(shot[i].answer_prefix.substr(0, 10), at + 1))
      ++answered;
    EXPECT_GE(answered, 2u);
    EXPECT_EQ(shot[i].examples.find(shot[i].answers[0]), std::string::npos);
    const TaskTokens t = task_tokens(tok, shot[i]);
    EXPECT_EQ(t.needle_shift, static_cast<int>(tok.encode(shot[i].examples).size()));
    EXPECT_LE(t.needle_shift, 2 * (kShotLength + 16));  // each example: 256 tokens and its written answer
    std::vector<std::string> values;                    // the needles' values (multikey's distractors too), by depth
    for (const auto& [a, b] : shot[i].needles)
      values.push_back(
          tok.decode(std::vector<int>(t.context.begin() + t.needle_shift + a, t.context.begin() + t.needle_shift + b)));
    EXPECT_NE(std::find(values.begin(), values.end(), shot[i].answers[0]), values.end());
    const TaskInstance back = task_instance_from_json(task_instance_json(shot[i]), "row");
    EXPECT_EQ(back.examples, shot[i].examples);
    EXPECT_EQ(back.shots, 2);
  }
  r.lengths = {8192 - kShotLength};
  EXPECT_THROW(r.validate(), Error);  // 2 shots push it past the model's 8192 positions
  r.shots = -1;
  EXPECT_THROW(r.validate(), Error);
}

TEST(Tasks, TheTextsAreWhatTheTokensEncodePieceByPiece) {
  const auto& tok = test::tiny_model().tokenizer();
  TaskSuiteRequest r = small_suite();
  r.tasks = {TaskId::Passkey};
  r.depths = {0.5};
  r.per_cell = 1;
  r.shots = 1;
  const TaskInstance in = generate_tasks(tok, r).front();
  for (const bool question_first : {false, true}) {
    SCOPED_TRACE(question_first);
    const TaskTexts texts = task_texts(in, question_first);
    ASSERT_EQ(texts.context.size(), question_first ? 3u : 2u);  // examples, [question], context
    EXPECT_EQ(texts.context[static_cast<size_t>(texts.needle_piece)], in.context);
    std::vector<int> ids;
    int shift = 0;
    for (size_t x = 0; x < texts.context.size(); ++x) {
      if (static_cast<int>(x) == texts.needle_piece) shift = static_cast<int>(ids.size());
      const std::vector<int> piece = tok.encode(texts.context[x]);
      ids.insert(ids.end(), piece.begin(), piece.end());
    }
    const TaskTokens t = task_tokens(tok, in, question_first);
    EXPECT_EQ(t.context, ids);
    EXPECT_EQ(t.needle_shift, shift);
    EXPECT_EQ(t.question, tok.encode(texts.question));
  }
}

TEST(TaskOptions, EveryOptionRoundTripsThroughItsText) {
  const TaskOptions defaults;
  const auto& schema = task_options_schema();
  TaskOptions o;
  for (const auto& f : schema.fields()) {
    if (!f.has_text()) continue;
    SCOPED_TRACE(f.name());
    f.set(o, f.get(defaults));
    EXPECT_EQ(f.get(o), f.get(defaults));
    EXPECT_EQ(schema.find(f.name()), &f);  // one field per name (press_seed apart from the policies' seed)
  }
  schema.set(o, "lengths", "512,1024");
  EXPECT_EQ(o.suite.lengths, (std::vector<int>{512, 1024}));
  schema.set(o, "policies", "none");
  EXPECT_TRUE(o.run.policies.empty());
  schema.set(o, "optimum", schema.find("optimum")->info.switch_text);
  EXPECT_FALSE(o.run.optimum);
  schema.set(o, "press_seed", "7");
  schema.set(o, "history", "9");
  EXPECT_EQ(o.press.seed, 7u);
  EXPECT_EQ(o.eval_request().run.policy.history, 9);
  try {
    schema.set(o, "per_cell", "many");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("per_cell"), std::string::npos) << e.what();
  }
  EXPECT_THROW(schema.set(o, "question_first", "maybe"), Error);
  EXPECT_EQ(schema.find("budget"), nullptr);  // the suite's budgets are shares: no one total
  EXPECT_EQ(schema.find("nope"), nullptr);
  EXPECT_EQ(schema.to_json(schema.from_json(schema.to_json(o))), schema.to_json(o));
}

// A JSON Lines row without max_new_tokens answers with the default, and docs/tasks.md says which.
TEST(Tasks, TheDocsStateTheDefaultAnswerLength) {
  std::ifstream in(std::string(KVO_SOURCE_DIR) + "/docs/tasks.md");
  std::stringstream page;
  page << in.rdbuf();
  const std::string want = "`max_new_tokens` defaults to " + std::to_string(TaskInstance{}.max_new_tokens);
  EXPECT_NE(page.str().find(want), std::string::npos) << want;
}

TEST(TaskOptions, ThePrefillProtocolsDefaultPoliciesAreThoseThatCanBePresses) {
  TaskOptions o;
  task_options_schema().set(o, "protocol", "prefill");
  const TaskEvalRequest r = o.eval_request();  // the default list holds `oracle`: refused as a press before
  EXPECT_FALSE(r.policies.empty());
  for (PolicyId id : r.policies) EXPECT_FALSE(policy_traits(id).offline) << policy_name(id);
  task_options_schema().set(o, "policies", "h2o,oracle");  // typed: refused in one line, not dropped
  EXPECT_THROW(o.eval_request(), Error);
  const std::vector<PolicyId> streaming = TaskOptions{}.eval_request().policies;
  EXPECT_NE(std::find(streaming.begin(), streaming.end(), PolicyId::Oracle), streaming.end());
}
