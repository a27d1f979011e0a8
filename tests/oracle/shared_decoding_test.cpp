// The decoding protocol of `oracle allocation` (oracle/shared_decoding.hpp): the head row is every
// unit's own offline optimum, sharing never loses and every row is certified; periodic compression's
// rows are each unit's periodic optimum, below compression at every step to their peak; scopes,
// floors, pages and periodic options that decoding does not compute are refused.
#include "kvo/oracle/shared_decoding.hpp"

#include <gtest/gtest.h>

#include "kvo/core/error.hpp"
#include "kvo/oracle/allocation_options.hpp"
#include "kvo/oracle/offline_periodic.hpp"
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

TEST(SharedDecoding, PeriodicRowsAreEachUnitsPeriodicOptimum) {
  const Trace tr = test::random_trace(2, 4, 2, 40, 8, 11);
  AllocationRequest req;
  req.protocol = AllocationProtocol::Decoding;
  set_allocation_option(req, "interval", "1,8");
  set_allocation_option(req, "target", "6");
  set_allocation_option(req, "recent", "2");
  set_allocation_option(req, "prompt_len", "5");
  req.scopes = parse_budget_scopes("head,model");
  const SharedDecodingResult res = run_shared_decoding(tr, req);
  ASSERT_EQ(res.rows.size(), 2u * 2u);
  for (size_t x = 0; x < 2; ++x) {
    const SharedDecodingRow &head = res.rows[2 * x], &model = res.rows[2 * x + 1];
    const int interval = x == 0 ? 1 : 8;
    EXPECT_EQ(head.interval, interval);
    EXPECT_EQ(head.k, 6);
    EXPECT_EQ(head.peak_k, 6 + interval);
    EXPECT_EQ(head.mean_k, 6 + (interval + 1) / 2);
    double per_unit = 0, every_step = 0;
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 2; ++h) {
        const OfflineProblem p = decoding_unit(tr, l, h, 6, 2);
        per_unit += solve_offline_periodic(std::span(&p, 1), {5, interval}).value;
        const OfflineProblem peak = decoding_unit(tr, l, h, 6 + interval - 1, 2);
        every_step += solve_offline_periodic(std::span(&peak, 1), {5, 1}).value;
      }
    EXPECT_NEAR(head.value, per_unit, 1e-9 * per_unit);
    EXPECT_NEAR(head.peak_value, every_step, 1e-9 * every_step);
    for (const SharedDecodingRow* r : {&head, &model}) {
      EXPECT_NEAR(r->upper, r->value, 1e-9 * r->value);
      EXPECT_NEAR(r->peak_upper, r->peak_value, 1e-9 * r->value);
      EXPECT_NEAR(r->mean_upper, r->mean_value, 1e-9 * r->value);
      // The prompt (5) fits the target (6): the periodic cache never exceeds the peak.
      EXPECT_LE(r->value, r->peak_value * (1 + 1e-12)) << "a cache never above the peak cannot beat it";
      if (interval == 1) {
        EXPECT_EQ(r->value, r->peak_value);
      }
      EXPECT_LE(r->mean_value, r->peak_value * (1 + 1e-12));
    }
    EXPECT_LE(head.value, model.value * (1 + 1e-12));
  }
  const nlohmann::json j = res.to_json("t");
  EXPECT_EQ(j["rows"][2]["interval"], 8);
  EXPECT_EQ(AllocationRequest::from_json(req.to_json()).intervals, (std::vector<int>{1, 8}));
}

TEST(SharedDecoding, RefusesWhatDecodingDoesNotCompute) {
  const Trace tr = test::random_trace(1, 4, 2, 16, 8, 1);
  const auto refuses = [&](AllocationRequest req, const std::string& part) {
    req.protocol = AllocationProtocol::Decoding;
    test::expect_refusal([&] { req.validate(tr); }, part);
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
  AllocationRequest no_target, no_interval, zero, both, prompt, long_prompt;
  set_allocation_option(no_target, "interval", "64");
  refuses(no_target, "interval needs target");
  set_allocation_option(no_interval, "target", "4");
  refuses(no_interval, "target is read with interval only");
  set_allocation_option(zero, "interval", "0");
  set_allocation_option(zero, "target", "4");
  refuses(zero, "compression interval 0 must be at least 1 step");
  both = zero;
  set_allocation_option(both, "interval", "2");
  set_allocation_option(both, "budgets", "4");
  refuses(both, "budgets is read by eviction at every step; with interval, give target");
  set_allocation_option(prompt, "prompt_len", "3");
  refuses(prompt, "prompt_len is read by the prefill protocol and by periodic compression");
  long_prompt = zero;
  set_allocation_option(long_prompt, "interval", "2");
  set_allocation_option(long_prompt, "prompt_len", "16");
  refuses(long_prompt, "prompt_len must be in [0, 15] for periodic compression");
  AllocationRequest big_target = long_prompt;
  set_allocation_option(big_target, "prompt_len", "0");
  set_allocation_option(big_target, "target", "17");
  refuses(big_target, "larger than the sequence");
  EXPECT_THROW(parse_allocation_protocol("decode"), Error);
}
