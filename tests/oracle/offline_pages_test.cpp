// Whole-page eviction during decoding (oracle/offline_pages.hpp): the page problem's optimum, alone
// and with a shared capacity, equals an enumeration of every schedule that evicts whole pages at
// any token step, scored on the token weights; pages never beat tokens; bad shapes are refused.
#include "kvo/oracle/offline_pages.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "kvo/core/error.hpp"
#include "kvo/oracle/offline_shared.hpp"
#include "random_units.hpp"

using namespace kvo;

namespace {

// The best value over every assignment of an end step (in tokens) to each page of each unit: page
// p of a unit is held from its first token p b until its end, at least until it leaves the newest
// R pages; at every token step the units hold at most H C pages. Scored on the token weights.
double enumerate_page_schedules(const std::vector<OfflineProblem>& units, const PageShape& shape) {
  const int n = units.front().n(), b = shape.page_size, q = (n + b - 1) / b;
  const int h = static_cast<int>(units.size());
  std::vector<int> end(static_cast<size_t>(h * q));
  double best = -1.0;
  std::function<void(int)> next = [&](int x) {
    if (x == h * q) {
      for (int t = 0; t < n; ++t) {
        int held = 0;
        for (int y = 0; y < h * q; ++y) held += (y % q) * b <= t && t <= end[static_cast<size_t>(y)];
        if (held > h * shape.pages) return;
      }
      double value = 0.0;
      for (int y = 0; y < h * q; ++y) {
        const OfflineProblem& u = units[static_cast<size_t>(y / q)];
        const int p = y % q;
        for (int t = p * b; t <= end[static_cast<size_t>(y)]; ++t)
          for (int j = p * b; j < std::min((p + 1) * b, t + 1); ++j) value += u.w(t, j);
      }
      best = std::max(best, value);
      return;
    }
    const int p = x % q, lo = std::min(n - 1, (p + shape.recent) * b - 1);
    for (int e = lo; e < n; ++e) {
      end[static_cast<size_t>(x)] = e;
      next(x + 1);
    }
  };
  next(0);
  return best;
}

std::vector<OfflineProblem> folded(const std::vector<OfflineProblem>& units, const PageShape& shape) {
  std::vector<OfflineProblem> out;
  for (const OfflineProblem& u : units) out.push_back(fold_into_pages(u, shape));
  return out;
}

}  // namespace

TEST(OfflinePages, OneUnitEqualsEveryWholePageSchedule) {
  int cases = 0;
  for (const auto& [n, b] : {std::pair{8, 2}, std::pair{9, 4}, std::pair{7, 2}})
    for (int k = b; k <= n; ++k)
      for (int r = 0; r <= k; ++r) {
        const std::vector<OfflineProblem> units = test::random_units(1, n, k, r, 100 * n + 10 * k + r);
        PageShape shape;
        try {
          shape = page_shape(k, r, b);
        } catch (const Error&) {
          continue;  // the window spans more pages than k holds: refused, tested below
        }
        const OfflineSolution s = solve_offline(fold_into_pages(units.front(), shape));
        const double brute = enumerate_page_schedules(units, shape);
        EXPECT_NEAR(s.value, brute, 1e-9 * std::max(1.0, brute)) << "n " << n << " b " << b << " k " << k << " r " << r;
        EXPECT_NEAR(s.upper, s.value, 1e-9 * std::max(1.0, brute));
        EXPECT_LE(s.value, solve_offline(units.front()).value * (1 + 1e-12));  // pages never gain
        ++cases;
      }
  EXPECT_GT(cases, 40);
}

TEST(OfflinePages, SharedCapacityEqualsEveryWholePageSchedule) {
  for (const auto& [n, b] : {std::pair{6, 2}, std::pair{7, 4}})
    for (int k = b; k <= n; ++k)
      for (int r : {0, 1, 2}) {
        if (r > k) continue;
        const std::vector<OfflineProblem> units = test::random_units(2, n, k, r, 7 * n + 3 * k + r);
        PageShape shape;
        try {
          shape = page_shape(k, r, b);
        } catch (const Error&) {
          continue;
        }
        const std::vector<OfflineProblem> pages = folded(units, shape);
        const SharedOfflineSolution s = solve_offline_shared(pages);
        const double brute = enumerate_page_schedules(units, shape);
        EXPECT_NEAR(s.value, brute, 1e-9 * std::max(1.0, brute)) << "n " << n << " b " << b << " k " << k << " r " << r;
        EXPECT_NEAR(s.upper, s.value, 1e-9 * std::max(1.0, brute));
      }
}

TEST(OfflinePages, PagesNeverBeatTokensAndPageSizeOneIsTheTokenProblem) {
  for (int r : {0, 3, 8}) {
    const std::vector<OfflineProblem> units = test::random_units(3, 48, 16, r, 31 + r);
    const std::vector<OfflineProblem> ones = folded(units, page_shape(16, r, 1));
    for (size_t u = 0; u < units.size(); ++u) {
      EXPECT_EQ(ones[u].budget, 16);
      EXPECT_EQ(ones[u].recent, std::max(1, r));  // the token being written is always held
      EXPECT_TRUE(ones[u].w.triangularView<Eigen::Lower>().toDenseMatrix().isApprox(
          units[u].w.triangularView<Eigen::Lower>().toDenseMatrix()));
    }
    const double tokens = solve_offline_shared(units).value;
    for (int b : {2, 4, 8, 16}) {
      if (b == 16 && r > 0) continue;  // the window's 2 pages of 16 exceed k = 16
      const SharedOfflineSolution s = solve_offline_shared(folded(units, page_shape(16, r, b)));
      EXPECT_LE(s.value, tokens * (1 + 1e-12)) << "b " << b << " r " << r;
      EXPECT_NEAR(s.upper, s.value, 1e-9 * s.value);
    }
  }
}

TEST(OfflinePages, ShapeAndHeldTokens) {
  const PageShape s = page_shape(40, 16, 16);
  EXPECT_EQ(s.pages, 2);   // floor(40 / 16)
  EXPECT_EQ(s.recent, 2);  // 16 tokens can span 2 pages of 16
  EXPECT_EQ(page_shape(40, 0, 16).recent, 1);
  EXPECT_EQ(page_shape(40, 17, 16).recent, 2);
  EXPECT_EQ(page_shape(48, 18, 16).recent, 3);
  // Pages 0 and 2 of a 21-token trace in pages of 8 held at the last page step: 8 + 5 tokens.
  EXPECT_EQ(tokens_held_at_end({2, 1, 2}, 21, 8), 13);
}

TEST(OfflinePages, BadShapesAreRefused) {
  auto message = [](int k, int r, int b) {
    try {
      page_shape(k, r, b);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(16, 0, 3), "page size 3 is not a positive power of two");
  EXPECT_EQ(message(16, 0, 0), "page size 0 is not a positive power of two");
  EXPECT_EQ(message(16, 0, 32), "page size 32 exceeds the per-unit budget k = 16: no whole page fits");
  EXPECT_EQ(message(20, 20, 16), "the recent window r = 20 can span 3 pages of 16, but k = 20 holds only 1");
}
