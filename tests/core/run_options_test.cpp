// The one run-option table (core/run_options.hpp) and the one list parser (core/text_list.hpp):
// defaults equal the policy registry's, every option parses its text form, JSON round-trips, the
// prompt length defaults to the trace's, and errors name the option rather than a CLI flag.
#include "kvo/core/run_options.hpp"

#include <gtest/gtest.h>

#include <set>

#include "kvo/core/error.hpp"
#include "kvo/core/greedy_evictor.hpp"
#include "kvo/core/objective_registry.hpp"
#include "kvo/core/text_list.hpp"
#include "test_support.hpp"

using namespace kvo;
using test::error_of;

TEST(RunOptions, DefaultsAreThePolicyRegistrys) {
  const RunOptions o;
  const RunConfig c = o.build(PolicyId::Greedy);
  const PolicySpec spec;
  EXPECT_EQ(c.policy.sinks, spec.sinks);
  EXPECT_EQ(c.policy.history, spec.history);
  EXPECT_EQ(c.policy.objective.name, spec.objective.name);
  EXPECT_EQ(c.policy.objective.h, spec.objective.h);
  EXPECT_EQ(c.policy.objective.window, spec.objective.window);
  EXPECT_EQ(c.policy.objective.alpha, spec.objective.alpha);
  EXPECT_EQ(c.prompt_len, 0);
}

TEST(RunOptions, EveryOptionParsesItsOwnTextForm) {
  RunOptions o;
  o.sinks = 2;
  o.alpha = 0.25;
  o.budget_overrides = {"L0=3", "L1H0=4"};
  o.prompt_len = 7;
  o.seed = 9;
  o.layers = {0, 2};
  const auto& schema = run_options_schema();
  for (const auto& f : schema.fields()) {
    if (!f.has_text()) continue;
    RunOptions back;
    const std::string text = f.get(o);
    if (text.empty()) continue;
    schema.set(back, f.name(), text);
    EXPECT_EQ(f.get(back), text) << f.name();
  }
}

TEST(RunOptions, JsonRoundTripsAndRefusesUnknownNames) {
  RunOptions o;
  o.history = 8;
  o.concave = "sqrt";
  o.heads = {1};
  const auto& schema = run_options_schema();
  const RunOptions back = schema.from_json(schema.to_json(o));
  EXPECT_EQ(schema.to_json(back), schema.to_json(o));
  EXPECT_EQ(schema.to_json(RunOptions{})["prompt_len"], nullptr);  // unset: the trace's
  EXPECT_NE(error_of([&] {
              schema.from_json({{"budgett", "3"}});
            }).find("run options: unknown field 'budgett'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              schema.from_json({{"sinks", "many"}});
            }).find("'sinks' has the wrong type"),
            std::string::npos);
}

TEST(RunOptions, PromptLengthDefaultsToTheTraces) {
  const Trace t = test::synthetic_layer(2, 2, 24, 16, 5, 1);
  RunOptions o;
  o.budget = std::string{"8"};  // not a literal: GCC 12 reports a false -Wrestrict in assign(const char*) here
  EXPECT_EQ(o.build(PolicyId::H2O, &t).prompt_len, 5);
  o.prompt_len = 0;
  EXPECT_EQ(o.build(PolicyId::H2O, &t).prompt_len, 0);
}

TEST(RunOptions, ErrorsNameTheOptionNotAFlag) {
  for (auto [name, text, want] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"sinks", "-1", "sinks must be >= 0"},
           {"history", "0", "history must be >= 1"},
           {"window", "0", "window must be >= 1"},
           {"sinks", "two", "sinks: 'two' is not an integer"},
           {"layers", "1,,2", "layers: empty item"},
           {"concave", "cube", "unknown concave transform 'cube'"}}) {
    const std::string got = error_of([&] {
      RunOptions o;
      run_options_schema().set(o, name, text);
      o.build(PolicyId::Streaming);
    });
    EXPECT_NE(got.find(want), std::string::npos) << name << "=" << text << ": " << got;
    EXPECT_EQ(got.find("--"), std::string::npos) << got;
  }
}

TEST(TextList, OneRuleForEveryList) {
  EXPECT_EQ(split_list("a, bc ,d", "policies"), (std::vector<std::string>{"a", "bc", "d"}));
  EXPECT_TRUE(split_list("", "policies").empty());
  EXPECT_TRUE(split_list("  ", "policies").empty());
  EXPECT_EQ(parse_int_list("1,3", "layers"), (std::vector<int>{1, 3}));
  EXPECT_EQ(parse_number_list("0.05,1e-1", "sweep"), (std::vector<double>{0.05, 0.1}));
  EXPECT_NE(error_of([] { split_list("a,", "policies"); }).find("policies: empty item in 'a,'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_int("3x", "layers"); }).find("layers: '3x' is not an integer"), std::string::npos);
  EXPECT_NE(error_of([] { parse_number("nan", "alpha"); }).find("alpha: 'nan' is not a number"), std::string::npos);
}

TEST(ObjectiveRegistry, OneTableBehindEveryObjectiveName) {
  std::string listed;
  for (const auto& e : objective_table()) {
    EXPECT_EQ(&parse_objective(e.name), &e);
    EXPECT_EQ(objective_needs_dense(std::string(e.name)), e.traits.needs_dense) << e.name;
    listed += (listed.empty() ? "" : ", ") + std::string(e.name);
  }
  // The objective option's help lists exactly the table's names, in its order.
  EXPECT_NE(run_options_schema().find("objective")->info.help.find("(" + listed + ")"), std::string::npos);
  EXPECT_EQ(objective_names_where([](const ObjectiveTraits& t) { return t.static_oracle; }), "dense-acc, mass or fl");
  EXPECT_NE(error_of([] { parse_objective("nope"); }).find("unknown objective 'nope' (known: acc, one-step"),
            std::string::npos);
}
