// The decoding protocol of `oracle allocation` (oracle/shared_decoding.hpp): the head row is every
// unit's own offline optimum, sharing never loses and every row is certified; scopes, floors and
// pages that decoding does not compute are refused.
#include "kvo/oracle/shared_decoding.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"
#include "kvo/oracle/allocation_options.hpp"
#include "kvo/oracle/offline_shared.hpp"
#include "test_support.hpp"

using namespace kvo;

TEST(SharedDecoding, HeadRowIsEachUnitsOptimumAndSharingNeverLoses) {
  const Trace tr = test::random_trace(2, 4, 2, 24, 8, 7);
  AllocationRequest req;
  req.protocol = AllocationProtocol::Decoding;
  set_allocation_option(req, "budgets", "25%,6");
  set_allocation_option(req, "recent", "2");
  req.scopes = parse_budget_scopes("head,layer,model");
  const SharedDecodingResult res = run_shared_decoding(tr, req);
  ASSERT_EQ(res.rows.size(), 2u * 3u);
  for (size_t b = 0; b < 2; ++b) {
    const SharedDecodingRow &head = res.rows[3 * b], &layer = res.rows[3 * b + 1], &model = res.rows[3 * b + 2];
    EXPECT_EQ(head.k, 6);  // 25% of 24, then 6 tokens
    EXPECT_EQ(head.recent, 2);
    double per_unit = 0;
    std::vector<OfflineProblem> units;
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 2; ++h) {
        units.push_back(decoding_unit(tr, l, h, 6, 2));
        per_unit += solve_offline(units.back()).value;
      }
    EXPECT_NEAR(head.value, per_unit, 1e-9 * per_unit);
    EXPECT_NEAR(model.value, solve_offline_shared(units).value, 1e-9 * per_unit);
    EXPECT_LE(head.value, layer.value * (1 + 1e-12));
    EXPECT_LE(layer.value, model.value * (1 + 1e-12));
    EXPECT_LE(model.value, model.total_mass);
    for (const SharedDecodingRow* r : {&head, &layer, &model}) {
      EXPECT_NEAR(r->upper, r->value, 1e-9 * r->value) << budget_scope_name(r->scope);
      EXPECT_EQ(r->per_head_value, head.value);
    }
    EXPECT_EQ(head.min_held, 6);
    EXPECT_EQ(head.max_held, 6);
  }
}

TEST(SharedDecoding, RefusesWhatDecodingDoesNotCompute) {
  const Trace tr = test::random_trace(1, 4, 2, 16, 8, 1);
  const auto refuses = [&](AllocationRequest req, const std::string& part) {
    req.protocol = AllocationProtocol::Decoding;
    try {
      req.validate(tr);
      ADD_FAILURE() << "accepted: " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  AllocationRequest layerwise, floor, pages, too_long, window;
  layerwise.scopes = {BudgetScope::Layerwise};
  refuses(layerwise, "the layerwise scope is computed for the prefill protocol only");
  set_allocation_option(floor, "floor", "2");
  refuses(floor, "floor is computed for the prefill protocol only");
  pages.page_sizes = {16};
  refuses(pages, "page sizes are computed for the prefill protocol only");
  set_allocation_option(too_long, "budgets", "20");
  refuses(too_long, "budget 20 (20 tokens) is larger than the sequence (16 tokens)");
  set_allocation_option(window, "budgets", "4");
  set_allocation_option(window, "recent", "5");
  refuses(window, "recent");
  EXPECT_THROW(parse_allocation_protocol("decode"), Error);
}
