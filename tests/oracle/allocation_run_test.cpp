// `oracle allocation` as one call (oracle/allocation_run.hpp): the request's protocol chooses the
// shared-budget optimum, and the result's JSON form and report are that optimum's own, with the
// request added to the JSON.
#include "kvo/oracle/allocation_run.hpp"

#include <gtest/gtest.h>

#include "test_support.hpp"

using namespace kvo;

TEST(AllocationRun, TheProtocolChoosesTheOptimumAndItsViews) {
  const Trace tr = test::random_trace(2, 4, 2, 24, 8, 3);
  AllocationRequest req;
  req.prompt_len = 12;
  req.ratios = {0.5};
  req.scopes = parse_budget_scopes("head,layer");
  const AllocationResult prefill = run_allocation(tr, req);
  ASSERT_TRUE(std::holds_alternative<SharedPrefillResult>(prefill.rows));
  const SharedPrefillResult direct = run_shared_prefill(tr, req);
  nlohmann::json want = direct.to_json("t.safetensors");
  want["request"] = req.to_json();
  EXPECT_EQ(prefill.to_json(req, "t.safetensors"), want);
  EXPECT_EQ(prefill.report(req, "t").text(), direct.report(req, "t").text());

  req.protocol = AllocationProtocol::Decoding;
  req.prompt_len = 0;
  AllocationRequest::schema().set(req, "budgets", "8");
  const AllocationResult decoding = run_allocation(tr, req);
  ASSERT_TRUE(std::holds_alternative<SharedDecodingResult>(decoding.rows));
  const SharedDecodingResult by_hand = run_shared_decoding(tr, req);
  EXPECT_EQ(decoding.to_json(req, "").at("rows"), by_hand.to_json("").at("rows"));
  EXPECT_EQ(decoding.report(req, "t").text(), by_hand.report(req, "t").text());
}
