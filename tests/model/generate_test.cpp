// Greedy generation as a library call (model/generate.hpp): the argmax of the batched forward pass
// at every step, a request validated before any work, and the eos rule.
#include "kvo/model/generate.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"
#include "kvo/model/recorder.hpp"
#include "model_fixture.hpp"

using namespace kvo;

TEST(Generate, EachTokenIsTheArgmaxOfTheFullForwardPass) {
  const auto& m = test::tiny_model();
  const auto prompt = test::gpl3_tokens(12);
  model::GenerateRequest req;
  req.max_tokens = 6;
  req.stop_at_eos = false;
  const model::GenerateResult r = model::generate(m, prompt, req);
  ASSERT_EQ(r.ids.size(), 6u);
  std::vector<int> all(prompt.begin(), prompt.end());
  for (int t = 0; t < 6; ++t) {
    auto cache = m.new_cache(static_cast<int>(all.size()));
    const model::MatrixRM logits = m.forward(all, cache);
    Eigen::Index best = 0;
    logits.row(logits.rows() - 1).maxCoeff(&best);
    EXPECT_EQ(r.ids[static_cast<size_t>(t)], static_cast<int>(best)) << t;
    all.push_back(r.ids[static_cast<size_t>(t)]);
  }
  EXPECT_EQ(r.text, m.tokenizer().decode(r.ids));
}

TEST(Generate, BadRequestsAreRefusedWithOneLine) {
  const auto& m = test::tiny_model();
  model::GenerateRequest req;
  req.max_tokens = 0;
  EXPECT_THROW(model::generate(m, test::gpl3_tokens(4), req), Error);
  EXPECT_THROW(model::generate(m, std::vector<int>{}, {}), Error);
}

TEST(Generate, RequestsAndRecordOptionsRoundTripAsJson) {
  model::GenerateRequest req;
  req.max_tokens = 5;
  req.stop_at_eos = false;
  EXPECT_EQ(model::GenerateRequest::from_json(req.to_json()).to_json(), req.to_json());
  EXPECT_THROW(model::GenerateRequest::from_json({{"tokens", 3}}), Error);
  model::RecordOptions ro;
  ro.tokens = 40;
  ro.layers = {0, 3};
  ro.prompt_len = 8;
  EXPECT_EQ(model::RecordOptions::from_json(ro.to_json()).to_json(), ro.to_json());
  ro.prompt_len = 41;
  EXPECT_THROW(ro.validate(), Error);
  ro.prompt_len = 0;
  ro.layers = {-1};
  EXPECT_THROW(ro.validate(), Error);
  ro.layers = {99};  // beyond the model: record_trace refuses it, naming the layer
  EXPECT_THROW(model::record_trace(test::tiny_model(), test::gpl3_text(), ro), Error);
}
