// Schema<T> (core/field_schema.hpp): a type's fields declared once give its JSON form both ways,
// its text form (the CLI's values, Python's keywords) and the flat view of nested option sets;
// reading starts from the defaults, takes a subset and names what it refuses.
#include "kvo/core/field_schema.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "kvo/core/request_json.hpp"
#include "kvo/core/run_options.hpp"
#include "test_support.hpp"

using namespace kvo;
using test::error_of;

namespace {

struct Inner {
  int depth = 2;
};

struct Toy {
  int n = 3;
  long long big = 1LL << 40;
  std::uint64_t seed = 5;
  double x = 0.5;
  bool on = true;
  std::string name = "a";
  std::string label = "A";
  std::optional<int> maybe;
  std::vector<int> ints = {1, 2};
  std::vector<double> xs = {0.5};
  std::vector<std::string> words;
  PolicyId policy = PolicyId::H2O;
  std::vector<PolicyId> policies = {PolicyId::Tova};
  Inner inner;
  RunOptions run;
};

const Schema<Toy>& toy_schema() {
  static const Schema<Toy> schema(
      "toy request",
      fields<Toy>(
          {{member(&Toy::n, {.name = "n", .help = "a count", .alias = "-n", .renamed_from = "count"}),
            member(&Toy::big, {.name = "big", .help = "a large count"}),
            member(&Toy::seed, {.name = "seed", .help = "a seed"}), member(&Toy::x, {.name = "x", .help = "a number"}),
            member(&Toy::on, {.name = "on", .help = "a switch", .flag = "--off", .switch_text = "false"}),
            member(&Toy::name, {.name = "name", .help = "a text"}),
            member(&Toy::maybe, {.name = "maybe", .help = "an optional count"}),
            member(&Toy::ints, {.name = "ints", .help = "counts"}),
            member(&Toy::xs, {.name = "xs", .help = "numbers", .excludes = "x"}),
            member(&Toy::words, {.name = "words", .help = "texts"}),
            member(&Toy::policy, {.name = "policy", .help = "a policy"}),
            member(&Toy::policies, {.name = "policies", .help = "policies"}),
            member(&Toy::inner, &Inner::depth, {.name = "depth", .help = "a nested count, flat"}),
            custom<Toy>(
                {.name = "shout", .help = "the name in capitals", .cli = false}, "text",
                [](Toy& t, std::string_view v) { t.label = std::string(v); }, [](const Toy& t) { return t.label; })},
           nested("run", &Toy::run, run_options_schema(), "Run")}));
  return schema;
}

}  // namespace

TEST(FieldSchema, WritesEveryFieldAndReadsASubsetFromTheDefaults) {
  const auto& s = toy_schema();
  Toy t;
  t.n = 7;
  t.policy = PolicyId::Tova;
  t.maybe = 4;
  t.run.budget = "12";
  t.inner.depth = 9;
  const nlohmann::json j = s.to_json(t);
  EXPECT_EQ(j.size(), 15u);  // every own field, the nested one as one object; lifted run options are not top-level
  EXPECT_EQ(j["policy"], policy_name(PolicyId::Tova));
  EXPECT_EQ(j["depth"], 9);
  EXPECT_EQ(j["run"]["budget"], "12");
  EXPECT_EQ(j["maybe"], 4);
  EXPECT_EQ(s.to_json(s.from_json(j)), j);
  const Toy partial = s.from_json({{"n", 9}, {"maybe", nullptr}, {"run", {{"sinks", 2}}}});
  EXPECT_EQ(partial.n, 9);
  EXPECT_FALSE(partial.maybe.has_value());  // null: the default
  EXPECT_EQ(partial.xs, std::vector<double>{0.5});
  EXPECT_EQ(partial.policy, PolicyId::H2O);
  EXPECT_EQ(partial.run.sinks, 2);
  EXPECT_EQ(partial.run.budget, RunOptions{}.budget);  // the nested set's other defaults stay
}

TEST(FieldSchema, RefusesUnknownFieldsWrongTypesRenamedFieldsAndOutOfRange) {
  const auto& s = toy_schema();
  EXPECT_EQ(error_of([&] { s.from_json({{"m", 1}}); }), "toy request: unknown field 'm'");
  EXPECT_EQ(error_of([&] { s.from_json({{"n", "x"}}); }), "toy request: 'n' has the wrong type: \"x\"");
  EXPECT_EQ(error_of([&] { s.from_json({{"n", 2.5}}); }), "toy request: 'n' has the wrong type: 2.5");
  EXPECT_EQ(error_of([&] { s.from_json({{"xs", {1, "a"}}}); }), "toy request: 'xs' has the wrong type: [1,\"a\"]");
  EXPECT_EQ(error_of([&] { s.from_json(nlohmann::json::array()); }), "toy request: expected a JSON object");
  EXPECT_EQ(error_of([&] { s.from_json({{"count", 2}}); }), "toy request: 'count' is now called 'n'");
  EXPECT_EQ(error_of([&] { s.from_json({{"n", 1LL << 40}}); }), "n is out of range");
  EXPECT_EQ(error_of([&] { s.from_json({{"seed", -1}}); }), "seed must be >= 0");
  EXPECT_NE(error_of([&] { s.from_json({{"policy", "nope"}}); }).find("unknown policy 'nope'"), std::string::npos);
  EXPECT_EQ(error_of([&] { s.from_json({{"run", {{"budgett", "1"}}}}); }), "run options: unknown field 'budgett'");
}

TEST(FieldSchema, TextSetsEveryFieldTheWayTheCliAndPythonDo) {
  const auto& s = toy_schema();
  Toy t;
  s.set(t, "n", "4");
  s.set(t, "big", "1e12");
  s.set(t, "x", "5%");
  s.set(t, "ints", "3, 4");
  s.set(t, "xs", "25%,1");
  s.set(t, "words", "a,b");
  s.set(t, "on", s.find("on")->info.switch_text);
  s.set(t, "policies", "h2o,window");
  s.set(t, "depth", "6");
  s.set(t, "history", "11");  // a lifted run option: flat, as on the command line
  s.set(t, "shout", "hey");
  EXPECT_EQ(t.n, 4);
  EXPECT_EQ(t.big, 1000000000000LL);
  EXPECT_DOUBLE_EQ(t.x, 0.05);
  EXPECT_EQ(t.ints, (std::vector<int>{3, 4}));
  EXPECT_EQ(t.xs, (std::vector<double>{0.25, 1.0}));
  EXPECT_EQ(t.words, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(t.on);
  EXPECT_EQ(t.policies, (std::vector<PolicyId>{PolicyId::H2O, PolicyId::Window}));
  EXPECT_EQ(t.inner.depth, 6);
  EXPECT_EQ(t.run.history, 11);
  EXPECT_EQ(t.label, "hey");
  EXPECT_EQ(s.get(t, "xs"), "0.25,1");
  EXPECT_EQ(s.get(t, "on"), "false");
  EXPECT_EQ(s.get(Toy{}, "maybe"), "");
  EXPECT_EQ(error_of([&] { s.set(t, "n", "many"); }), "n: 'many' is not an integer");
  EXPECT_EQ(error_of([&] { s.set(t, "on", "maybe"); }), "on takes true or false, got 'maybe'");
  EXPECT_EQ(error_of([&] { s.set(t, "ints", "1,,2"); }), "ints: empty item in '1,,2'");
  EXPECT_EQ(error_of([&] { s.set(t, "count", "1"); }), "toy request: 'count' is now called 'n'");
  EXPECT_NE(error_of([&] { s.set(t, "run", "x"); }).find("unknown option 'run'"), std::string::npos);
}

TEST(FieldSchema, FlagsAndNamesAreDerivedOnceAndListed) {
  const auto& s = toy_schema();
  EXPECT_EQ(s.find("maybe")->flag(), "--maybe");
  EXPECT_EQ(s.find("on")->flag(), "--off");
  EXPECT_EQ(s.find("budget_overrides")->flag(), "--budget-override");
  EXPECT_EQ(s.find("history")->info.group, "Policy parameters");  // the set's own group wins
  EXPECT_EQ(s.find("ints")->kind, "list of integers");
  EXPECT_TRUE(s.find("ints")->list);
  EXPECT_FALSE(s.find("shout")->info.cli);
  EXPECT_EQ(s.find("run"), nullptr);  // the nested object has no text form
  EXPECT_EQ(s.names().substr(0, 12), "n, big, seed");
  EXPECT_EQ(kebab_flag("prompt_len"), "--prompt-len");
  EXPECT_EQ(number_text(0.1), "0.1");
  EXPECT_EQ(number_text(20.0), "20");
}

TEST(FieldSchema, RefusesTwoFieldsTypedTogetherWhenOneReplacesTheOther) {
  const auto typed = [](std::initializer_list<std::string_view> names) {
    return [names](std::string_view name) { return std::find(names.begin(), names.end(), name) != names.end(); };
  };
  EXPECT_NO_THROW(toy_schema().refuse_exclusive(typed({"xs", "n"})));
  EXPECT_NO_THROW(toy_schema().refuse_exclusive(typed({"x"})));
  EXPECT_EQ(error_of([&] {
              toy_schema().refuse_exclusive(typed({"x", "n", "xs"}));
            }),
            "toy request: give xs or x, not both");
  // The JSON form is a whole record: every field is written, and a record that holds both reads back.
  Toy t;
  t.xs = {0.25};
  EXPECT_EQ(toy_schema().from_json(toy_schema().to_json(t)).xs, std::vector<double>{0.25});
}
