// The exact prefill optimum (oracle/prefill_oracle.hpp): equal to enumeration of every set, its
// dual bound tight, the weights a partition of the following queries' mass, and never beaten by
// a press; output fidelity: E computed as a decoder renormalises, the bound E <= B on every set,
// B's minimiser equal to enumeration with a tight dual.
#include "kvo/oracle/prefill_oracle.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/synth.hpp"

using namespace kvo;

namespace {

Trace small_trace(int n, std::uint64_t seed) {
  SynthOptions so;
  so.layers = 1;
  so.heads = 4;
  so.kv_heads = 2;
  so.tokens = n;
  so.head_dim = 16;
  so.prompt_len = 0;
  so.seed = seed;
  return synthesize(so);
}

// Every press at compression ratios 0.3 and 0.7, windows short enough for a prompt of P tokens.
PrefillComparisonOptions every_press(int P) {
  PrefillComparisonOptions o;
  o.prompt_len = P;
  for (const PressEntry& e : press_table())
    for (double r : {0.3, 0.7}) {
      PressOptions p;
      p.id = e.id;
      p.compression_ratio = r;
      p.window_size = 16;
      p.lag_size = 16;
      o.presses.push_back(p);
    }
  return o;
}

// Every k-subset of the prompt [0, P) as an ascending list.
std::vector<std::vector<int>> subsets(int P, int k) {
  std::vector<std::vector<int>> out;
  for (unsigned mask = 0; mask < (1u << P); ++mask) {
    if (std::popcount(mask) != k) continue;
    std::vector<int> set;
    for (int j = 0; j < P; ++j)
      if (mask >> j & 1u) set.push_back(j);
    out.push_back(set);
  }
  return out;
}

// E(S) the direct way: per query, softmax over the kept logits, the output, the distance to the
// full output; mean over the group.
double naive_output_error(const Trace& tr, int layer, int kv, int P, const std::vector<int>& set) {
  const int g = tr.group_size();
  double e = 0;
  for (int h = kv * g; h < (kv + 1) * g; ++h) {
    const HeadView head(tr, layer, h);
    for (int t = P; t < tr.n_tokens; ++t) {
      std::vector<int> all(static_cast<size_t>(t + 1)), kept(set);
      for (int j = 0; j <= t; ++j) all[static_cast<size_t>(j)] = j;
      for (int j = P; j <= t; ++j) kept.push_back(j);
      auto output = [&](const std::vector<int>& keys) {
        std::vector<double> l(keys.size()), p(keys.size());
        head.logits(t, keys, l);
        softmax(l, p);
        Eigen::VectorXd o = Eigen::VectorXd::Zero(tr.head_dim);
        for (size_t x = 0; x < keys.size(); ++x) o += p[x] * head.value(keys[x]);
        return o;
      };
      e += (output(kept) - output(all)).norm() / g;
    }
  }
  return e;
}

}  // namespace

TEST(PrefillOracle, EqualsEnumerationOfEverySetWithATightDualBound) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const Trace tr = small_trace(16, seed);
    const int P = 6 + static_cast<int>(seed % 6);
    for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
      const PrefillUnit u = prefill_unit(tr, 0, kv, P);
      for (int k = 0; k <= P; ++k) {
        double best = 0;
        for (const auto& set : subsets(P, k)) best = std::max(best, prefill_value(u, set));
        const PrefillOptimum o = solve_prefill(u, k);
        ASSERT_EQ(static_cast<int>(o.set.size()), k);
        ASSERT_NEAR(o.value, best, 1e-12) << seed << " " << k;
        ASSERT_NEAR(o.upper, o.value, 1e-12);
      }
    }
  }
}

TEST(PrefillOracle, WeightsAndDecodedMassPartitionTheFollowingQueries) {
  const Trace tr = small_trace(48, 3);
  const PrefillUnit u = prefill_unit(tr, 0, 1, 20);
  EXPECT_EQ(u.queries, 28);
  EXPECT_NEAR(u.prompt_mass + u.decoded_mass, 28.0, 1e-9);  // each row sums to 1
}

TEST(PrefillOracle, NoPressBeatsTheOptimum) {
  const Trace tr = small_trace(160, 5);
  PrefillComparisonOptions o = every_press(100);
  const auto rows = compare_presses(tr, 0, o);
  ASSERT_EQ(rows.size(), o.presses.size() * tr.n_kv_heads);
  for (const PressVsOptimum& r : rows) {
    EXPECT_LE(r.value, r.optimum * (1 + 1e-12)) << press_name(r.press);
    EXPECT_LE(r.fraction, 1 + 1e-12);
    EXPECT_LE(r.overlap, r.k);
  }
}

TEST(PrefillOracle, RefusesAPromptWithoutFollowingQueries) {
  const Trace tr = small_trace(16, 0);
  EXPECT_THROW(prefill_unit(tr, 0, 0, 16), Error);
  EXPECT_THROW(prefill_unit(tr, 0, 0, 0), Error);
  EXPECT_THROW(prefill_unit(tr, 0, 2, 8), Error);
}

TEST(PrefillOutput, ErrorsEqualTheDirectComputation) {
  const Trace tr = small_trace(90, 7);  // two blocks of following queries at P = 20
  const int P = 20;
  const std::vector<std::vector<int>> sets = {{}, {0, 1, 2}, {3, 7, 11, 19}, {0, 5, 6, 7, 8, 9, 10, 12, 13, 18}};
  for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
    const std::vector<double> e = output_errors(tr, 0, kv, P, sets);
    ASSERT_EQ(e.size(), sets.size());
    for (size_t s = 0; s < sets.size(); ++s) EXPECT_NEAR(e[s], naive_output_error(tr, 0, kv, P, sets[s]), 1e-10) << s;
  }
  std::vector<int> whole(P);
  for (int j = 0; j < P; ++j) whole[static_cast<size_t>(j)] = j;
  EXPECT_NEAR(output_errors(tr, 0, 1, P, std::vector<std::vector<int>>{whole})[0], 0.0, 1e-12);
}

TEST(PrefillOutput, TheBoundHoldsOnEverySetAndItsMinimiserIsExactAndCertified) {
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    const Trace tr = small_trace(14, 100 + seed);
    const int P = 5 + static_cast<int>(seed % 5);
    for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
      const PrefillUnit u = prefill_unit(tr, 0, kv, P);
      ASSERT_EQ(u.bound_weight.size(), static_cast<size_t>(P));
      for (int k = 0; k <= P; ++k) {
        const auto all = subsets(P, k);
        const std::vector<double> e = output_errors(tr, 0, kv, P, all);
        double min_bound = INFINITY, min_error = INFINITY;
        for (size_t s = 0; s < all.size(); ++s) {
          const double b = output_bound(u, all[s]);
          ASSERT_LE(e[s], b * (1 + 1e-12) + 1e-12) << "seed " << seed << " k " << k << " set " << s;
          min_bound = std::min(min_bound, b);
          min_error = std::min(min_error, e[s]);
        }
        const PrefillOptimum o = solve_output_bound(u, k);
        ASSERT_EQ(static_cast<int>(o.set.size()), k);
        const double b = output_bound(u, o.set);
        ASSERT_NEAR(b, min_bound, 1e-12 * (1 + u.bound_total));
        ASSERT_NEAR(u.bound_total - o.upper, b, 1e-12 * (1 + u.bound_total));  // the dual certifies min B
        const double e_b = output_errors(tr, 0, kv, P, std::vector<std::vector<int>>{o.set})[0];
        ASSERT_LE(min_error, e_b + 1e-15);  // B's minimiser bounds the unknown optimum of E from above
        ASSERT_LE(e_b, b * (1 + 1e-12) + 1e-12);
      }
    }
  }
}

TEST(PrefillOutput, ComparisonRecordsAreConsistent) {
  const Trace tr = small_trace(160, 5);
  PrefillComparisonOptions o = every_press(100);
  for (const PressVsOptimum& r : compare_presses(tr, 0, o)) {
    ASSERT_TRUE(std::isfinite(r.output_error)) << press_name(r.press);
    EXPECT_LE(r.output_error, r.output_bound * (1 + 1e-12)) << press_name(r.press);
    EXPECT_LE(r.bound_optimum_bound, r.output_bound * (1 + 1e-12)) << press_name(r.press);
    EXPECT_LE(r.bound_optimum_error, r.bound_optimum_bound * (1 + 1e-12));
    EXPECT_LE(r.mass_optimum_error, output_bound(prefill_unit(tr, 0, r.kv_head, 100),
                                                 solve_prefill(prefill_unit(tr, 0, r.kv_head, 100), r.k).set) *
                                        (1 + 1e-12));
  }
  o.output_fidelity = false;
  for (const PressVsOptimum& r : compare_presses(tr, 0, o)) EXPECT_TRUE(std::isnan(r.output_error));
}

TEST(PrefillOutput, RefusesBadSetsAndTracesWithoutValues) {
  const Trace tr = small_trace(16, 0);
  const std::vector<std::vector<int>> unsorted = {{3, 1}}, outside = {{0, 8}};
  EXPECT_THROW(output_errors(tr, 0, 0, 8, unsorted), Error);
  EXPECT_THROW(output_errors(tr, 0, 0, 8, outside), Error);
  EXPECT_THROW(output_errors(tr, 0, 0, 16, std::vector<std::vector<int>>{}), Error);
  Trace no_values = tr;
  no_values.v[0].clear();
  const PrefillUnit u = prefill_unit(no_values, 0, 0, 8);
  EXPECT_TRUE(u.bound_weight.empty());
  EXPECT_THROW(solve_output_bound(u, 3), Error);
  EXPECT_THROW(output_errors(no_values, 0, 0, 8, std::vector<std::vector<int>>{{1}}), Error);
}
