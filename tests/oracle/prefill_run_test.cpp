// `oracle prefill` as a library call (oracle/prefill_run.hpp): its request's JSON form round-trips
// with the press parameters by name, and the result's JSON form is what the CLI writes.
#include "kvo/oracle/prefill_run.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

using namespace kvo;
using test::error_of;

TEST(PrefillRun, RequestJsonFormRoundTrips) {
  PrefillOracleRequest req;
  req.prompt_len = 12;
  req.presses = "knorm,streaming_llm";
  req.ratios = {0.25, 0.5};
  req.press.n_sink = 2;
  req.output_fidelity = false;
  req.layers = {1};
  const PrefillOracleRequest back = PrefillOracleRequest::from_json(req.to_json());
  EXPECT_EQ(back.to_json(), req.to_json());
  EXPECT_EQ(back.press.n_sink, 2);
  EXPECT_EQ(PrefillOracleRequest::from_json({{"prompt_len", 3}}).presses, "all");
  EXPECT_NE(error_of([] {
              PrefillOracleRequest::from_json({{"press", {{"nsink", 2}}}});
            }).find("prefill oracle request: press: unknown field 'nsink'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              PrefillOracleRequest::from_json({{"ratio", 0.5}});
            }).find("unknown field 'ratio'"),
            std::string::npos);
}

TEST(PrefillRun, ResultJsonHoldsTheRecordsAndTheTraceName) {
  const Trace tr = test::synthetic_layer(2, 1, 24, 16, 0, 5);
  PrefillOracleRequest req;
  req.prompt_len = 16;
  req.presses = "knorm";
  req.ratios = {0.5};
  const PrefillOracleResult r = run_prefill_oracle(tr, req);
  const nlohmann::json j = r.to_json("t.safetensors");
  EXPECT_EQ(j["trace"], "t.safetensors");
  EXPECT_EQ(j["prompt_len"], 16);
  EXPECT_EQ(j["following_queries"], 8);
  EXPECT_EQ(j["records"], r.records());
  EXPECT_EQ(j["records"].size(), r.rows.size());
}
