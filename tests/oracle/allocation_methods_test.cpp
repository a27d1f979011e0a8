// kvpress's allocating presses against the optimum of the same memory (oracle/allocation_methods.hpp):
// every row's value is its press's kept sets measured independently, its references equal
// enumerating every allocation its scope allows, they are ordered as their freedom is and certified,
// and the request's refusals name the option.
#include "kvo/oracle/allocation_methods.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "kvo/core/adakv.hpp"
#include "kvo/core/error.hpp"
#include "kvo/oracle/prefill_oracle.hpp"
#include "kvo/oracle/shared_prefill.hpp"
#include "test_support.hpp"

using namespace kvo;

namespace {

constexpr int kPrompt = 12;

// Two layers of 2 KV heads; small windows and a gentle pyramid, so that PyramidKV's layer budgets
// differ on a 12-token prompt.
AllocationRequest methods_request() {
  AllocationRequest req;
  req.prompt_len = kPrompt;
  req.ratios = {0.5, 0.75};
  req.scopes = {BudgetScope::Head};
  req.presses = "knorm,snapkv,pyramidkv,tova";
  req.alpha_safeguard = {0.0, 0.5};
  req.press.window_size = 2;
  req.press.kernel_size = 1;
  req.press.beta = 2;
  return req;
}

// Each unit's best mass at every count (prefix sums of its sorted weights), independent of the code under test.
std::vector<std::vector<double>> best_at_counts(const std::vector<PrefillUnit>& units) {
  std::vector<std::vector<double>> best;
  for (const PrefillUnit& u : units) {
    std::vector<double> w = u.weight;
    std::sort(w.begin(), w.end(), std::greater<>());
    best.emplace_back(1, 0.0);
    for (double x : w) best.back().push_back(best.back().back() + x);
  }
  return best;
}

// The best over every count vector that `allowed` accepts.
double enumerate(const std::vector<std::vector<double>>& best,
                 const std::function<bool(const std::vector<int>&)>& allowed) {
  std::vector<int> size(best.size());
  double top = -1;
  std::function<void(size_t)> go = [&](size_t u) {
    if (u == size.size()) {
      if (!allowed(size)) return;
      double v = 0;
      for (size_t x = 0; x < size.size(); ++x) v += best[x][static_cast<size_t>(size[x])];
      top = std::max(top, v);
      return;
    }
    for (int s = 0; s <= kPrompt; ++s) {
      size[u] = s;
      go(u + 1);
    }
  };
  go(0);
  return top;
}

// Checks one row against its press's kept sets computed again (layer l at ratio_of_layer(l)) and
// its references against enumeration; returns the row's per-layer totals.
std::pair<int, int> expect_row_measured(const Trace& tr, const AllocationRequest& req, const AllocationMethodRow& m,
                                        const std::function<double(int)>& ratio_of_layer) {
  std::vector<PrefillUnit> units;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 2; ++h) units.push_back(prefill_unit(tr, l, h, kPrompt, false));
  const auto best = best_at_counts(units);
  const int k = press_n_kept(kPrompt, m.compression_ratio);
  std::vector<std::vector<int>> kept;
  for (int l = 0; l < 2; ++l) {
    PressOptions o = req.press;
    o.id = m.press;
    o.compression_ratio = ratio_of_layer(l);
    const PressResult pr = run_press(press_layer_of(tr, l, kPrompt), o);
    for (auto& s : m.alpha_safeguard < 0 ? pr.kept : adakv_kept(pr.scores, k, m.alpha_safeguard)) kept.push_back(s);
  }
  double value = 0, at_counts = 0, per_head = 0;
  for (size_t u = 0; u < kept.size(); ++u) {
    EXPECT_EQ(m.slots[u], static_cast<int>(kept[u].size()));
    value += prefill_value(units[u], kept[u]);
    at_counts += best[u][kept[u].size()];
    per_head += best[u][static_cast<size_t>(k)];
  }
  EXPECT_NEAR(m.value, value, 1e-12);
  EXPECT_NEAR(m.at_counts, at_counts, 1e-12);
  EXPECT_NEAR(m.per_head, per_head, 1e-12);
  EXPECT_EQ(m.total, std::accumulate(m.slots.begin(), m.slots.end(), 0L));
  // Its scope's best at its total, by enumeration.
  const auto layer_totals = [&](const std::vector<int>& s) { return std::pair{s[0] + s[1], s[2] + s[3]}; };
  const auto [t0, t1] = layer_totals(m.slots);
  double scope = 0;
  if (m.scope == BudgetScope::Head) scope = at_counts;
  if (m.scope == BudgetScope::Layer)
    scope = enumerate(best, [&](const std::vector<int>& s) {
      const auto [a, b] = layer_totals(s);
      return a <= t0 && b <= t1 && *std::min_element(s.begin(), s.end()) >= m.floor;
    });
  if (m.scope == BudgetScope::Layerwise)
    scope = enumerate(best, [&](const std::vector<int>& s) {
      return s[0] == s[1] && s[2] == s[3] && s[0] + s[2] <= m.slots[0] + m.slots[2];
    });
  const double any =
      enumerate(best, [&](const std::vector<int>& s) { return std::accumulate(s.begin(), s.end(), 0L) <= m.total; });
  EXPECT_NEAR(m.scope_optimum, scope, 1e-12);
  EXPECT_NEAR(m.best, any, 1e-12);
  EXPECT_NEAR(m.scope_upper, m.scope_optimum, 1e-12);
  EXPECT_NEAR(m.best_upper, m.best, 1e-12);
  EXPECT_LE(m.value, m.at_counts + 1e-12);
  EXPECT_LE(m.at_counts, m.scope_optimum + 1e-12);
  EXPECT_LE(m.scope_optimum, m.best + 1e-12);
  EXPECT_EQ(m.k, k);
  return {t0, t1};
}

}  // namespace

TEST(AllocationMethods, RowsMeasureTheirPressesAndEqualEnumeration) {
  const Trace tr = test::random_trace(2, 4, 2, 20, 8, 3);
  const AllocationRequest req = methods_request();
  const SharedPrefillResult res = run_shared_prefill(tr, req);
  ASSERT_EQ(res.methods.size(), 2u * 4u * 3u);  // ratios x presses x (alone, two alphas)
  bool pyramid_moves = false, adakv_moves = false;
  for (const AllocationMethodRow& m : res.methods) {
    SCOPED_TRACE(m.method + " at " + std::to_string(m.compression_ratio));
    const int k = press_n_kept(kPrompt, m.compression_ratio);
    const auto [t0, t1] = expect_row_measured(tr, req, m, [&](int) { return m.compression_ratio; });
    if (m.alpha_safeguard >= 0) {
      EXPECT_EQ(m.scope, BudgetScope::Layer);
      EXPECT_EQ(m.floor, adakv_safeguard(k, m.alpha_safeguard));
      EXPECT_EQ(t0, 2 * k);
      EXPECT_EQ(t1, 2 * k);
      adakv_moves |= m.min_slots != m.max_slots;
    } else if (m.press == PressId::PyramidKV) {
      EXPECT_EQ(m.scope, BudgetScope::Layerwise);
      pyramid_moves |= m.slots[0] != m.slots[2];
    } else {
      EXPECT_EQ(m.scope, BudgetScope::Head);
      EXPECT_EQ(m.total, 4L * k);
      EXPECT_NEAR(m.per_head, m.at_counts, 1e-12);
    }
  }
  EXPECT_TRUE(pyramid_moves) << "the test's pyramid should give its layers different budgets";
  EXPECT_TRUE(adakv_moves) << "AdaKV should give some layer's heads different counts";
  EXPECT_EQ(res.to_json("t")["methods"].size(), res.methods.size());
}

// PerLayerCompressionPress: each layer's press at the caller's ratio for it (kvpress sets the inner
// press's compression_ratio per layer), after the rows of the shared ratios; its k is the mean's.
TEST(AllocationMethods, PerLayerRowsRunEachLayerAtItsRatio) {
  const Trace tr = test::random_trace(2, 4, 2, 20, 8, 3);
  AllocationRequest req = methods_request();
  req.ratios = {0.5};
  req.alpha_safeguard.clear();
  req.layer_ratios = {0.25, 0.75};
  const SharedPrefillResult res = run_shared_prefill(tr, req);
  ASSERT_EQ(res.methods.size(), 4u + 4u);
  for (size_t i = 4; i < res.methods.size(); ++i) {
    const AllocationMethodRow& m = res.methods[i];
    SCOPED_TRACE(m.method);
    EXPECT_EQ(m.method, "per-layer(" + press_name(res.methods[i - 4].press) + ")");
    EXPECT_EQ(m.press, res.methods[i - 4].press);
    EXPECT_EQ(m.compression_ratio, 0.5);
    EXPECT_EQ(m.scope, res.methods[i - 4].scope);
    const auto [t0, t1] =
        expect_row_measured(tr, req, m, [&](int l) { return req.layer_ratios[static_cast<size_t>(l)]; });
    if (m.press != PressId::PyramidKV) {
      EXPECT_EQ(t0, 2 * press_n_kept(kPrompt, 0.25));  // 9 keys per head in layer 0
      EXPECT_EQ(t1, 2 * press_n_kept(kPrompt, 0.75));  // 3 in layer 1
    }
  }
}

TEST(AllocationMethods, RefusesWhatItCannotMeasureWithOneLine) {
  const Trace tr = test::random_trace(1, 4, 2, 16, 8, 1);
  const auto refuses = [&](const AllocationRequest& req, const std::string& part) {
    test::expect_refusal([&] { req.validate(tr); }, part);
  };
  AllocationRequest ok;
  ok.prompt_len = 8;
  ok.presses = "knorm";
  ok.alpha_safeguard = {0.2};
  EXPECT_NO_THROW(ok.validate(tr));
  AllocationRequest r = ok;
  r.presses.clear();
  refuses(r, "alpha_safeguard wraps each of presses in AdaKV");
  r = ok;
  r.alpha_safeguard = {1.5};
  refuses(r, "alpha_safeguard 1.5");
  r = ok;
  r.presses = "lru";
  refuses(r, "unknown press 'lru'");
  r = ok;
  r.presses = "snapkv";  // window_size 64 > the 8-token prompt
  refuses(r, "snapkv");
  r = ok;
  r.protocol = AllocationProtocol::Decoding;
  r.prompt_len = 0;
  refuses(r, "measured under the prefill protocol only");
  r = ok;
  r.layer_ratios = {0.5, 0.5};
  refuses(r, "layer_ratios: one ratio per layer, in the order of layers: 1 layers, 2 given");
  r.layer_ratios = {1.0};
  refuses(r, "layer ratio 1 is outside [0, 1)");
  r.presses.clear();
  r.alpha_safeguard.clear();
  r.layer_ratios = {0.5};
  refuses(r, "layer_ratios wraps each of presses in PerLayerCompressionPress");
  r = ok;
  r.presses.clear();
  r.alpha_safeguard.clear();
  r.protocol = AllocationProtocol::Decoding;
  r.prompt_len = 0;
  r.layer_ratios = {0.5};
  refuses(r, "layer_ratios (PerLayerCompressionPress) is measured under the prefill protocol only");
}

TEST(AllocationMethods, RequestReadsBackFromItsJson) {
  AllocationRequest r = methods_request();
  const AllocationRequest back = AllocationRequest::from_json(r.to_json());
  EXPECT_EQ(back.to_json(), r.to_json());
  EXPECT_EQ(back.presses, r.presses);
  EXPECT_EQ(back.alpha_safeguard, r.alpha_safeguard);
  r.layer_ratios = {0.25, 0.75};
  EXPECT_EQ(AllocationRequest::from_json(r.to_json()).layer_ratios, r.layer_ratios);
  EXPECT_EQ(back.press.beta, 2);
}
