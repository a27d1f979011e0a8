// The text search (studies/text_search.hpp) on the tiny model: over a space small enough to list,
// it finds the worst text the list holds; it is reproducible from its seed, its saved instance
// and trace read back to the same value and pass verify, the task target scores eviction's loss,
// and bad requests are refused in one line naming the field.
#include "kvo/studies/text_search.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kvo/model/recorder.hpp"
#include "kvo/oracle/competitive.hpp"
#include "model_fixture.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::studies;

namespace {

TextSearchRequest small_text_request() {
  TextSearchRequest r;
  r.words = {"There", "is", "sky", "green"};
  r.edit_words = 2;
  r.insertions = false;
  r.evaluations = 60;
  r.restarts = 3;
  return r;
}

// h2o's mean ratio to OPT_dyn on the instance with this context, computed without the search.
double ratio_of(const TaskInstance& base, const std::string& context, const TextSearchRequest& r) {
  const auto& m = test::tiny_model();
  TaskInstance inst = base;
  inst.context = context;
  const TaskTokens tt = task_tokens(m.tokenizer(), inst);
  std::vector<int> ids = tt.context;
  ids.insert(ids.end(), tt.question.begin(), tt.question.end());
  model::RecordOptions o;
  o.tokens = static_cast<int>(ids.size());
  const Trace t = model::record_trace(m, ids, o);
  CompetitiveOptions co;
  ReplayOptions ro;
  ro.run = r.run.build(r.policy, &t);
  co.policies.push_back(ro);
  co.threads = 1;
  double sum = 0.0;
  const auto heads = competitive_ratios(t, co);
  for (const HeadCompetitive& h : heads) sum += h.policies.front().value / h.opt_dyn;
  return sum / static_cast<double>(heads.size());
}

}  // namespace

TEST(TextSearch, FindsTheWorstTextOfASpaceSmallEnoughToList) {
  const TextSearchRequest r = small_text_request();
  TaskSuiteRequest sr;
  sr.tasks = {TaskId::Passkey};
  sr.lengths = {r.length};
  sr.depths = {r.depth};
  sr.per_cell = 1;
  const TaskInstance base = generate_tasks(test::tiny_model().tokenizer(), sr).front();
  // The first two editable words open the context; each can take any of the four pool words.
  const std::string opening = "There is ";
  ASSERT_EQ(base.context.rfind(opening, 0), 0u);
  double lowest = INFINITY;
  const std::string rest = base.context.substr(opening.size());
  for (const std::string& a : r.words)
    for (const std::string& b : r.words) {
      std::string context = a;
      context.append(" ").append(b).append(" ").append(rest);
      lowest = std::min(lowest, ratio_of(base, context, r));
    }
  const TextSearchResult res = search_text(test::tiny_model(), r);
  EXPECT_DOUBLE_EQ(res.unaltered_value, ratio_of(base, base.context, r));
  EXPECT_DOUBLE_EQ(res.worst_value, lowest);
  EXPECT_DOUBLE_EQ(res.worst.ratio, res.worst_value);
  EXPECT_EQ(res.editable_words, 2);
  EXPECT_EQ(res.pool_words, 4);
  for (const TextEdit& e : res.edits) EXPECT_EQ(e.kind, "replace");
  for (size_t x = 1; x < res.curve.size(); ++x) EXPECT_LE(res.curve[x].worst, res.curve[x - 1].worst);
}

TEST(TextSearch, IsReproducibleAndItsSavedTextVerifies) {
  TextSearchRequest r;
  r.evaluations = 8;
  r.restarts = 1;
  r.target = "task";
  r.run.budget = "50%";
  r.out = test::fresh_dir("TextSearch", "saved").string();
  long ticks = 0;
  const TextSearchResult a = search_text(test::tiny_model(), r, [&] { ++ticks; });
  EXPECT_EQ(ticks, 8);
  r.out.clear();
  const TextSearchResult b = search_text(test::tiny_model(), r);
  EXPECT_EQ(a.worst_value, b.worst_value);
  EXPECT_EQ(a.verified, a.worst_value);
  EXPECT_EQ(a.theorem_failures, 0);
  // The task target: the policy's score minus the full cache's, ties broken by the mass it holds.
  const double mass = std::isfinite(a.unaltered.mass_of_optimum) ? a.unaltered.mass_of_optimum : 0.0;
  EXPECT_DOUBLE_EQ(a.unaltered_value, a.unaltered.score - a.unaltered.full_score + 1e-3 * mass);
  EXPECT_LE(a.worst_value, a.unaltered_value);
  EXPECT_NE(a.report().text().find("(the same)"), std::string::npos);
  EXPECT_EQ(a.to_json().at("instance"), "passkey-256-d50-0");
}

TEST(TextSearch, RefusesBadRequestsNamingTheField) {
  auto refuse = [](const std::function<void(TextSearchRequest&)>& edit, const std::string& part) {
    TextSearchRequest r = small_text_request();
    edit(r);
    test::expect_refusal([&] { r.validate(); }, part);
  };
  refuse([](auto& r) { r.target = std::string("bogus"); }, "target: 'bogus' is neither ratio nor task");
  refuse([](auto& r) { r.task = std::string("nope"); }, "unknown task 'nope'");
  refuse([](auto& r) { r.policy = PolicyId::Lookahead; }, "policy: lookahead is not a policy a decoder can drive");
  refuse([](auto& r) { r.words.emplace_back("two words"); }, "words: 'two words' is not one word");
  refuse([](auto& r) { r.edit_words = -1; }, "edit_words: -1 is below 0");
  refuse([](auto& r) { r.run.budget = "100%"; }, "keeps all 256 tokens of h2o");
}
