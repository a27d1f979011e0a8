// The decoding protocol of `oracle allocation` (oracle/shared_decoding.hpp): the head row is every
// unit's own offline optimum, sharing never loses and every row is certified; periodic compression's
// rows are each unit's periodic optimum, below compression at every step to their peak; page rows
// are each sharing set's optimum over whole pages, below the same scope's tokens; scopes, floors,
// page shapes and periodic options that decoding does not compute are refused.
#include "kvo/oracle/shared_decoding.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

#include "kvo/core/error.hpp"
#include "kvo/oracle/allocation.hpp"
#include "kvo/oracle/offline_pages.hpp"
#include "kvo/oracle/offline_periodic.hpp"
#include "kvo/oracle/offline_shared.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

// A decoding request with options set through the option table, shared by the given scopes.
AllocationRequest decoding_request(std::initializer_list<std::pair<const char*, const char*>> options,
                                   const char* scopes) {
  AllocationRequest req;
  req.protocol = AllocationProtocol::Decoding;
  for (const auto& [name, text] : options) AllocationRequest::schema().set(req, name, text);
  req.scopes = parse_budget_scopes(scopes);
  return req;
}

}  // namespace

TEST(SharedDecoding, HeadRowIsEachUnitsOptimumAndSharingNeverLoses) {
  const Trace tr = test::random_trace(2, 4, 2, 24, 8, 7);
  const AllocationRequest req = decoding_request({{"budgets", "25%,6"}, {"recent", "2"}}, "head,layer,model");
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
  const AllocationRequest req =
      decoding_request({{"interval", "1,8"}, {"target", "6"}, {"recent", "2"}, {"prompt_len", "5"}}, "head,model");
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

TEST(SharedDecoding, PageRowsAreTheOptimaOverWholePages) {
  const Trace tr = test::random_trace(2, 4, 2, 37, 8, 5);  // the last page of 4 and of 8 is short
  const AllocationRequest req =
      decoding_request({{"budgets", "16"}, {"recent", "3"}, {"page_sizes", "4,1,8"}}, "head,layer");
  const SharedDecodingResult res = run_shared_decoding(tr, req);
  ASSERT_EQ(res.rows.size(), 3u * 2u);  // page-size-major in the request's order, then scope
  std::vector<OfflineProblem> units;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) units.push_back(decoding_unit(tr, l, h, 16, 3));
  const double token_head = res.rows[2].value, token_layer = res.rows[3].value;
  for (size_t x = 0; x < res.rows.size(); ++x) {
    const SharedDecodingRow& r = res.rows[x];
    const int b = std::vector<int>{4, 1, 8}[x / 2];
    ASSERT_EQ(r.page_size, b);
    ASSERT_EQ(r.scope, x % 2 == 0 ? BudgetScope::Head : BudgetScope::Layer);
    const PageShape shape = b == 1 ? PageShape{1, 16, 3} : page_shape(16, 3, b);
    double expected = 0;
    int min_held = 1 << 30, max_held = 0;
    for (size_t set = 0; set < 2; ++set) {  // the head row: each unit alone; the layer row: a layer's pair
      std::vector<OfflineProblem> pages;
      for (size_t u = 2 * set; u < 2 * set + 2; ++u)
        pages.push_back(b == 1 ? units[u] : fold_into_pages(units[u], shape));
      if (r.scope == BudgetScope::Layer) {
        const SharedOfflineSolution s = solve_offline_shared(pages);
        expected += s.value;
        for (const std::vector<int>& end : s.end) {
          min_held = std::min(min_held, tokens_held_at_end(end, 37, b));
          max_held = std::max(max_held, tokens_held_at_end(end, 37, b));
        }
      } else {
        for (const OfflineProblem& p : pages) expected += solve_offline(p).value;
      }
    }
    EXPECT_NEAR(r.value, expected, 1e-9 * expected) << "b " << b;
    EXPECT_NEAR(r.upper, r.value, 1e-9 * r.value);
    EXPECT_EQ(r.token_value, r.scope == BudgetScope::Head ? token_head : token_layer);
    EXPECT_LE(r.value, r.token_value * (1 + 1e-12)) << "pages never beat tokens";
    EXPECT_EQ(r.per_head_value, res.rows[x - x % 2].value);  // the head row of the same page size
    if (r.scope == BudgetScope::Layer) {
      EXPECT_EQ(r.min_held, min_held);
      EXPECT_EQ(r.max_held, max_held);
    }
    EXPECT_LE(r.max_held, 2 * 16);
  }
  // Pages of 8 (2 per unit, window 1 page) hold at most 16 tokens, and whole pages: page 4 of the
  // 37-token trace holds 5.
  EXPECT_EQ(res.rows[4].max_held, 13);
  const nlohmann::json j = res.to_json("t");
  EXPECT_EQ(j["rows"][0]["page_size"], 4);
  EXPECT_EQ(j["rows"][1]["token_value"], token_layer);
}

// Column generation over recomputed rows gives every row of the dense solver: tokens and pages,
// every scope, certified.
TEST(SharedDecoding, ColumnGenerationGivesTheDenseRows) {
  const Trace tr = test::random_trace(2, 6, 3, 45, 8, 13);
  const AllocationRequest req =
      decoding_request({{"budgets", "12,40%"}, {"recent", "2"}, {"page_sizes", "1,4"}}, "head,layer,model");
  const SharedDecodingResult dense = run_shared_decoding(tr, req);
  for (const int threads : {1, 2}) {
    AllocationRequest cg = req;
    AllocationRequest::schema().set(cg, "solver", "column-generation");
    cg.threads = threads;
    const SharedDecodingResult s = run_shared_decoding(tr, cg);
    ASSERT_EQ(s.rows.size(), dense.rows.size());
    ASSERT_EQ(s.rows.size(), 2u * 2u * 3u);
    for (size_t x = 0; x < s.rows.size(); ++x) {
      const SharedDecodingRow &a = s.rows[x], &b = dense.rows[x];
      EXPECT_EQ(a.scope, b.scope);
      EXPECT_EQ(a.page_size, b.page_size);
      EXPECT_NEAR(a.value, b.value, 1e-9 * b.value) << x;
      EXPECT_NEAR(a.upper, a.value, 1e-9 * b.value) << x;
      EXPECT_NEAR(a.token_value, b.token_value, 1e-9 * b.value) << x;
      EXPECT_NEAR(a.total_mass, b.total_mass, 1e-9 * b.total_mass);
    }
  }
  EXPECT_EQ(AllocationRequest::from_json(req.to_json()).solver, DecodingSolver::Dense);
  AllocationRequest cg = req;
  AllocationRequest::schema().set(cg, "solver", "column-generation");
  EXPECT_EQ(AllocationRequest::from_json(cg.to_json()).solver, DecodingSolver::ColumnGeneration);
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
  AllocationRequest::schema().set(floor, "floor", "2");
  refuses(floor, "floor is computed for the prefill protocol only");
  AllocationRequest::schema().set(pages, "budgets", "4");
  pages.page_sizes = {8};
  refuses(pages, "page size 8 exceeds the per-unit budget k = 4: no whole page fits");
  AllocationRequest odd_page = pages, wide_window = pages, periodic_pages;
  odd_page.page_sizes = {1, 6};
  refuses(odd_page, "page size 6 is not a positive power of two");
  wide_window.page_sizes = {4};
  AllocationRequest::schema().set(wide_window, "recent", "2");
  refuses(wide_window, "the recent window r = 2 can span 2 pages of 4, but k = 4 holds only 1");
  AllocationRequest::schema().set(periodic_pages, "interval", "4");
  AllocationRequest::schema().set(periodic_pages, "target", "4");
  periodic_pages.page_sizes = {2};
  refuses(periodic_pages, "page sizes are computed for eviction at every step and for the prefill protocol");
  AllocationRequest::schema().set(too_long, "budgets", "20");
  refuses(too_long, "budget 20 (20 tokens) is larger than the sequence (16 tokens)");
  AllocationRequest::schema().set(window, "budgets", "4");
  AllocationRequest::schema().set(window, "recent", "5");
  refuses(window, "recent");
  AllocationRequest no_target, no_interval, zero, both, prompt, long_prompt;
  AllocationRequest::schema().set(no_target, "interval", "64");
  refuses(no_target, "interval needs target");
  AllocationRequest::schema().set(no_interval, "target", "4");
  refuses(no_interval, "target is read with interval only");
  AllocationRequest::schema().set(zero, "interval", "0");
  AllocationRequest::schema().set(zero, "target", "4");
  refuses(zero, "compression interval 0 must be at least 1 step");
  both = zero;
  AllocationRequest::schema().set(both, "interval", "2");
  AllocationRequest::schema().set(both, "budgets", "4");
  refuses(both, "budgets is read by eviction at every step; with interval, give target");
  AllocationRequest::schema().set(prompt, "prompt_len", "3");
  refuses(prompt, "prompt_len is read by the prefill protocol and by periodic compression");
  long_prompt = zero;
  AllocationRequest::schema().set(long_prompt, "interval", "2");
  AllocationRequest::schema().set(long_prompt, "prompt_len", "16");
  refuses(long_prompt, "prompt_len must be in [0, 15] for periodic compression");
  AllocationRequest big_target = long_prompt;
  AllocationRequest::schema().set(big_target, "prompt_len", "0");
  AllocationRequest::schema().set(big_target, "target", "17");
  refuses(big_target, "larger than the sequence");
  EXPECT_THROW(parse_allocation_protocol("decode"), Error);
  AllocationRequest periodic_cg = zero;
  AllocationRequest::schema().set(periodic_cg, "interval", "2");
  AllocationRequest::schema().set(periodic_cg, "solver", "column-generation");
  refuses(periodic_cg, "solver column-generation solves eviction at every step");
  test::expect_refusal([] { parse_decoding_solver("sparse"); },
                       "unknown solver 'sparse' (known: dense, column-generation)");
  AllocationRequest prefill_cg;
  prefill_cg.prompt_len = 8;
  AllocationRequest::schema().set(prefill_cg, "solver", "column-generation");
  test::expect_refusal([&] { prefill_cg.validate(tr); }, "solver is read by the decoding protocol only");
}
