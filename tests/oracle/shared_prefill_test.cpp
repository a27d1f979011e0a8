// The shared-budget prefill optimum (oracle/shared_prefill.hpp): every scope equal to enumerating
// every family of kept sets on a small trace, the head scope equal to solve_prefill per unit, the
// scopes ordered as their freedom is, the request's refusals and its JSON form.
#include "kvo/oracle/shared_prefill.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <iostream>

#include "kvo/core/error.hpp"
#include "kvo/core/press.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

// Random q, k and v: 4 query heads in 2 KV groups, d = 8.
Trace small_trace(int layers, int n, std::uint64_t seed) { return test::random_trace(layers, 4, 2, n, 8, seed); }

// The best mass of a unit keeping `count` of its aligned pages of b positions (the last may be
// short), over every subset of pages: independent of the code under test.
double best_pages(const PrefillUnit& u, int b, int count) {
  const int pages = (u.prompt_len + b - 1) / b;
  double best = -1;
  for (unsigned mask = 0; mask < (1u << pages); ++mask) {
    if (std::popcount(mask) != count) continue;
    double v = 0;
    for (int j = 0; j < u.prompt_len; ++j)
      if (mask >> (j / b) & 1u) v += u.weight[static_cast<size_t>(j)];
    best = std::max(best, v);
  }
  return best;
}

// The best summed mass over every choice of per-unit kept pages whose counts satisfy the scope
// (k and floor in pages).
double enumerate_scope(const std::vector<PrefillUnit>& units, int kv_heads, BudgetScope scope, int k, int floor,
                       int b = 1) {
  const int pages = (units.front().prompt_len + b - 1) / b;
  double best = -1;
  std::vector<int> size(units.size());
  const auto allowed = [&] {
    const size_t layers = units.size() / static_cast<size_t>(kv_heads);
    long total = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      total += size[u];
      if (scope == BudgetScope::Head && size[u] != k) return false;
      if (size[u] < floor) return false;
    }
    for (size_t l = 0; l < layers; ++l) {
      long in_layer = 0;
      for (int h = 0; h < kv_heads; ++h) {
        const int s = size[l * static_cast<size_t>(kv_heads) + static_cast<size_t>(h)];
        in_layer += s;
        if (scope == BudgetScope::Layerwise && s != size[l * static_cast<size_t>(kv_heads)]) return false;
      }
      if (scope == BudgetScope::Layer && in_layer > static_cast<long>(kv_heads) * k) return false;
    }
    return total <= static_cast<long>(units.size()) * k;
  };
  std::function<void(size_t)> go = [&](size_t u) {
    if (u == units.size()) {
      if (!allowed()) return;
      double v = 0;
      for (size_t x = 0; x < units.size(); ++x) v += best_pages(units[x], b, size[x]);
      best = std::max(best, v);
      return;
    }
    for (int s = 0; s <= pages; ++s) {
      size[u] = s;
      go(u + 1);
    }
  };
  go(0);
  return best;
}

SharedPrefillRow row_of(const SharedPrefillResult& r, BudgetScope scope, double ratio) {
  for (const auto& row : r.rows)
    if (row.scope == scope && row.compression_ratio == ratio) return row;
  ADD_FAILURE() << "no row";
  return {};
}

}  // namespace

TEST(SharedPrefill, EveryScopeEqualsEnumerationWithATightBound) {
  const Trace tr = small_trace(2, 10, 3);
  const int P = 5;
  std::vector<PrefillUnit> units;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) units.push_back(prefill_unit(tr, l, h, P, false));
  AllocationRequest req;
  req.prompt_len = P;
  req.ratios = {0.5, 0.8};
  req.scopes = parse_budget_scopes("all");
  for (const char* floor : {"0", "1"}) {
    req.floor = floor;
    const SharedPrefillResult res = run_shared_prefill(tr, req);
    ASSERT_EQ(res.rows.size(), 2u * 4u);
    for (const SharedPrefillRow& row : res.rows) {
      SCOPED_TRACE(budget_scope_name(row.scope) + " at " + std::to_string(row.compression_ratio) + ", floor " + floor);
      EXPECT_EQ(row.k, press_n_kept(P, row.compression_ratio));
      const int f = row.scope == BudgetScope::Head ? row.k : row.floor;
      EXPECT_NEAR(row.value, enumerate_scope(units, 2, row.scope, row.k, f), 1e-12);
      EXPECT_NEAR(row.upper, row.value, 1e-12);
      // The slots are a feasible family worth the value.
      double v = 0;
      long used = 0;
      for (size_t u = 0; u < units.size(); ++u) {
        v += solve_prefill(units[u], row.slots[u]).value;
        EXPECT_EQ(shared_prefill_set(units[u], row.slots[u]), solve_prefill(units[u], row.slots[u]).set);
        used += row.slots[u];
        EXPECT_GE(row.slots[u], f);
      }
      EXPECT_NEAR(v, row.value, 1e-12);
      EXPECT_LE(used, row.total);
    }
  }
}

TEST(SharedPrefill, PagesEqualEnumerationOfPageSetsAndNeverBeatTokens) {
  const Trace tr = small_trace(2, 14, 5);
  const int P = 9;  // pages of 2 and 4, the last one short
  std::vector<PrefillUnit> units;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) units.push_back(prefill_unit(tr, l, h, P, false));
  AllocationRequest req;
  req.prompt_len = P;
  req.ratios = {0.2, 0.5};  // k = 7 and 4
  req.scopes = parse_budget_scopes("all");
  req.page_sizes = {1, 2, 4};
  req.floor = "1";
  const SharedPrefillResult res = run_shared_prefill(tr, req);
  ASSERT_EQ(res.rows.size(), 2u * 3u * 4u);
  for (const SharedPrefillRow& row : res.rows) {
    SCOPED_TRACE(budget_scope_name(row.scope) + " at " + std::to_string(row.compression_ratio) + ", pages of " +
                 std::to_string(row.page_size));
    const int b = row.page_size, pages = row.k / b;
    const int f = row.scope == BudgetScope::Head ? pages : std::min(pages, (1 + b - 1) / b);
    EXPECT_NEAR(row.value, enumerate_scope(units, 2, row.scope, pages, f, b), 1e-12);
    EXPECT_NEAR(row.upper, row.value, 1e-12);
    EXPECT_LE(row.value, row.token_value + 1e-12);
    for (int slots : row.slots) EXPECT_EQ(slots % b, 0);
    if (b == 1) {
      EXPECT_EQ(row.value, row.token_value);
    }
  }
}

TEST(SharedPrefill, HeadScopeIsThePerUnitOptimumAndFreedomOrdersTheScopes) {
  const Trace tr = small_trace(3, 48, 11);
  AllocationRequest req;
  req.prompt_len = 32;
  req.ratios = {0.5, 0.9};
  req.scopes = parse_budget_scopes("all");
  req.floor = "20%";
  const SharedPrefillResult res = run_shared_prefill(tr, req);
  for (double r : req.ratios) {
    const int k = press_n_kept(32, r);
    double per_unit = 0;
    for (int l = 0; l < 3; ++l)
      for (int h = 0; h < 2; ++h) per_unit += solve_prefill(prefill_unit(tr, l, h, 32, false), k).value;
    const SharedPrefillRow head = row_of(res, BudgetScope::Head, r);
    const SharedPrefillRow layer = row_of(res, BudgetScope::Layer, r);
    const SharedPrefillRow layerwise = row_of(res, BudgetScope::Layerwise, r);
    const SharedPrefillRow model = row_of(res, BudgetScope::Model, r);
    EXPECT_NEAR(head.value, per_unit, 1e-12);
    EXPECT_EQ(head.gain, 1.0);
    // More freedom never loses: head <= layer <= model and head <= layerwise <= model.
    EXPECT_LE(head.value, layer.value + 1e-12);
    EXPECT_LE(layer.value, model.value + 1e-12);
    EXPECT_LE(head.value, layerwise.value + 1e-12);
    EXPECT_LE(layerwise.value, model.value + 1e-12);
    EXPECT_LE(model.value, model.prompt_mass + 1e-12);
    EXPECT_NEAR(model.gain, model.value / head.value, 1e-15);
    EXPECT_GE(model.min_slots, model.floor);
    EXPECT_EQ(model.floor, std::max(1, k / 5));
    for (int l = 0; l < 3; ++l) EXPECT_EQ(layerwise.slots[2 * l], layerwise.slots[2 * l + 1]);
  }
}

TEST(SharedPrefill, RefusesBadRequestsWithOneLine) {
  const Trace tr = small_trace(1, 16, 1);
  const auto refuses = [&](const AllocationRequest& req, const std::string& part) {
    test::expect_refusal([&] { req.validate(tr); }, part);
  };
  AllocationRequest ok;
  ok.prompt_len = 8;
  EXPECT_NO_THROW(ok.validate(tr));
  AllocationRequest r = ok;
  r.floor = "5";  // k = 4 at ratio 0.5 of 8
  refuses(r, "the floors would exceed the total budget");
  r = ok;
  r.floor = "two";
  refuses(r, "floor:");
  r = ok;
  r.prompt_len = 16;
  refuses(r, "prompt_len must be in [1, 15]");
  r = ok;
  r.ratios = {1.0};
  refuses(r, "outside [0, 1)");
  r = ok;
  r.layers = {3};
  refuses(r, "layer 3 is not in the trace");
  r = ok;
  r.page_sizes = {3};
  refuses(r, "page size 3 is not a positive power of two");
  r = ok;
  r.page_sizes = {8};  // k = 4 at ratio 0.5 of 8
  refuses(r, "page size 8 exceeds the per-unit budget k = 4");
  EXPECT_THROW(parse_budget_scopes("heads"), Error);
}

// The sets eval and tasks replay: each unit's heaviest keys at the counts of its scope's row, the
// head scope solve_prefill's sets, every scope the same total.
TEST(SharedPrefill, SetsFollowTheScopesCounts) {
  const Trace tr = small_trace(2, 24, 9);
  std::vector<PrefillUnit> units;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) units.push_back(prefill_unit(tr, l, h, 16, false));
  AllocationRequest req;
  req.prompt_len = 16;
  req.ratios = {0.75};  // k = 4
  const SharedPrefillResult res = run_shared_prefill(tr, req);
  for (const SharedPrefillRow& row : res.rows) {
    const auto sets = shared_prefill_sets(units, 2, row.scope, 4);
    ASSERT_EQ(sets.size(), units.size());
    double value = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      EXPECT_EQ(sets[u], shared_prefill_set(units[u], row.slots[u])) << budget_scope_name(row.scope);
      if (row.scope == BudgetScope::Head) {
        EXPECT_EQ(sets[u], solve_prefill(units[u], 4).set);
      }
      value += prefill_value(units[u], sets[u]);
    }
    EXPECT_NEAR(value, row.value, 1e-12) << budget_scope_name(row.scope);
  }
  EXPECT_THROW(shared_prefill_sets(units, 3, BudgetScope::Layer, 4), Error);
}

TEST(SharedPrefill, RequestReadsBackFromItsJson) {
  AllocationRequest r;
  r.prompt_len = 12;
  r.ratios = {0.25};
  r.scopes = {BudgetScope::Model, BudgetScope::Layer};
  r.floor = "20%";
  r.layers = {0, 2};
  const AllocationRequest back = AllocationRequest::from_json(r.to_json());
  EXPECT_EQ(back.to_json(), r.to_json());
  EXPECT_EQ(back.scopes, r.scopes);
}

TEST(SharedPrefill, DocsExample) {  // docs/allocation.md's C++ example, on a synthetic trace
  const Trace trace = small_trace(2, 48, 5);
  testing::internal::CaptureStdout();
  // --8<-- [start:allocation]
  kvo::AllocationRequest req;
  req.prompt_len = 32;
  req.ratios = {0.8};
  req.scopes = kvo::parse_budget_scopes("head,model");
  req.floor = "20%";
  const kvo::SharedPrefillResult res = kvo::run_shared_prefill(trace, req);
  for (const kvo::SharedPrefillRow& row : res.rows)
    std::cout << kvo::budget_scope_name(row.scope) << ": gain " << row.gain << " over per-head budgets\n";
  // --8<-- [end:allocation]
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(res.rows.size(), 2u);
  EXPECT_NE(out.find("head: gain 1 over per-head budgets"), std::string::npos) << out;
  EXPECT_GE(res.rows[1].gain, 1.0);
}
