// `kvoracle eval`, `eval prefill` and `perplexity` as library calls (studies/eval_run.hpp,
// press_eval_run.hpp, perplexity.hpp): each call gives what the computation under it gives for the
// same options, requests refuse what they cannot run naming the option, and their JSON forms
// round-trip.
#include "kvo/studies/eval_run.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kvo/core/error.hpp"
#include "kvo/model/perplexity.hpp"
#include "kvo/studies/press_eval_run.hpp"
#include "model_fixture.hpp"
#include "test_support.hpp"

using namespace kvo;
using test::error_of;

TEST(EvalRun, TheCallEqualsTheClosedLoopWithTheSameOptions) {
  const auto& m = test::tiny_model();
  const std::string text = test::gpl3_text();
  studies::EvalRequest req;
  req.tokens = 24;
  req.policies = {PolicyId::H2O, PolicyId::Window};
  req.budgets = {"50%", "6"};
  req.run.history = 5;
  const studies::EvalResult a = studies::run_eval(m, text, req);
  studies::EvalOptions o;
  o.tokens = 24;
  o.policies = req.policies;
  o.budgets = {Amount::parse("50%"), Amount::parse("6")};
  o.run = req.run.build(PolicyId::H2O);
  const studies::EvalResult b = studies::evaluate_policies(m, text, o);
  ASSERT_EQ(a.points.size(), 4u);
  EXPECT_EQ(studies::eval_result_json(a, "t"), studies::eval_result_json(b, "t"));
  const nlohmann::json j = studies::eval_result_json(a, "GPL-3");
  EXPECT_EQ(j["text"], "GPL-3");
  EXPECT_EQ(j["points"][3]["policy"], policy_name(PolicyId::Window));
  EXPECT_EQ(j["points"][3]["k"], 6);
}

TEST(EvalRun, RequestsAreValidatedNamingTheOptionAndRoundTripAsJson) {
  studies::EvalRequest req;
  req.tokens = 1;
  EXPECT_NE(error_of([&] { req.validate(); }).find("tokens must be in [2"), std::string::npos);
  req = {};
  req.policies.clear();
  EXPECT_NE(error_of([&] { req.validate(); }).find("policies: at least one"), std::string::npos);
  req = {};
  req.budgets = {"20%", "x"};
  EXPECT_NE(error_of([&] { req.validate(); }).find("'x'"), std::string::npos);
  req = {};
  req.run.history = 0;
  EXPECT_NE(error_of([&] { req.validate(); }).find("history must be >= 1"), std::string::npos);
  req = {};
  req.tokens = 64;
  req.policies = {PolicyId::Tova};
  req.run.seed = 9;
  const studies::EvalRequest back = studies::EvalRequest::from_json(req.to_json());
  EXPECT_EQ(back.to_json(), req.to_json());
  EXPECT_EQ(back.policies, req.policies);
  EXPECT_NE(error_of([] {
              studies::EvalRequest::from_json({{"token", 3}});
            }).find("eval request: unknown field 'token'"),
            std::string::npos);
}

TEST(PressEvalRun, TheCallEqualsTheClosedLoopWithTheSameOptions) {
  const auto& m = test::tiny_model();
  const std::string text = test::gpl3_text();
  studies::PressEvalRequest req;
  req.tokens = 40;
  req.prompt_len = 28;
  req.presses = "knorm,streaming_llm";
  req.ratios = {0.5};
  req.press.n_sink = 2;
  req.policies = {PolicyId::H2O};
  const studies::PressEvalResult a = studies::run_press_eval(m, text, req);
  studies::PressEvalOptions o;
  o.tokens = 40;
  o.prompt_len = 28;
  PressOptions knorm, streaming;
  knorm.id = PressId::Knorm;
  streaming.id = PressId::StreamingLLM;
  knorm.n_sink = streaming.n_sink = 2;
  o.presses = {knorm, streaming};
  o.reference_ratios = o.policy_ratios = {0.5};
  o.policies = {PolicyId::H2O};
  o.run = req.run.build(PolicyId::H2O);
  const studies::PressEvalResult b = studies::evaluate_presses(m, text, o);
  EXPECT_EQ(studies::press_eval_result_json(a, "t"), studies::press_eval_result_json(b, "t"));
  const nlohmann::json j = studies::press_eval_result_json(a, "GPL-3");
  // Two presses, one policy, the two references, at one ratio.
  ASSERT_EQ(j["rows"].size(), 5u);
  EXPECT_EQ(j["rows"][0]["set"], "knorm");
  EXPECT_EQ(j["prompt_len"], 28);
}

TEST(PressEvalRun, RequestsAreValidatedNamingTheOptionAndRoundTripAsJson) {
  studies::PressEvalRequest req;
  req.tokens = 40;
  req.prompt_len = 39;
  EXPECT_NE(error_of([&] { req.validate(); }).find("continuation of 2 or more"), std::string::npos);
  req.prompt_len = 20;
  req.presses = "knorm,nope";
  EXPECT_NE(error_of([&] { req.validate(); }).find("unknown press 'nope'"), std::string::npos);
  req.presses = "knorm";
  req.ratios = {1.0};
  EXPECT_NE(error_of([&] { req.validate(); }).find("[0, 1)"), std::string::npos);
  req.ratios = {0.5};
  req.policies = {PolicyId::H2O};
  req.run.sinks = -1;
  EXPECT_NE(error_of([&] { req.validate(); }).find("sinks"), std::string::npos);
  req.run.sinks = 1;
  req.press.window_size = 8;
  const studies::PressEvalRequest back = studies::PressEvalRequest::from_json(req.to_json());
  EXPECT_EQ(back.to_json(), req.to_json());
  EXPECT_EQ(back.press.window_size, 8);
  EXPECT_NE(error_of([] {
              studies::PressEvalRequest::from_json({{"press", {{"seed", "1"}}}});
            }).find("'seed' has the wrong type"),
            std::string::npos);
}

TEST(Perplexity, IsTheExponentOfTheMeanNllOverTheFirstTokens) {
  const auto& m = test::tiny_model();
  const model::PerplexityResult r = model::perplexity(m, test::gpl3_text(), 20);
  EXPECT_EQ(r.tokens, 20);
  EXPECT_EQ(r.predictions, 19);
  EXPECT_EQ(r.mean_nll, model::mean_nll(m, test::gpl3_tokens(20)));
  EXPECT_EQ(r.perplexity, std::exp(r.mean_nll));
  EXPECT_NE(error_of([&] { model::perplexity(m, "Hi", 1); }).find("fewer than 2 tokens"), std::string::npos);
  EXPECT_NE(error_of([&] { model::perplexity(m, "Hi", -1); }).find("tokens must be >= 0"), std::string::npos);
}
