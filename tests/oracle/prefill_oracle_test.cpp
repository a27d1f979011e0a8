// The exact prefill optimum (oracle/prefill_oracle.hpp): equal to enumeration of every set, its
// dual bound tight, the weights a partition of the following queries' mass, and never beaten by
// a press.
#include "kvo/oracle/prefill_oracle.hpp"

#include <gtest/gtest.h>

#include <bit>

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

}  // namespace

TEST(PrefillOracle, EqualsEnumerationOfEverySetWithATightDualBound) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const Trace tr = small_trace(16, seed);
    const int P = 6 + static_cast<int>(seed % 6);
    for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
      const PrefillUnit u = prefill_unit(tr, 0, kv, P);
      for (int k = 0; k <= P; ++k) {
        double best = 0;
        for (unsigned mask = 0; mask < (1u << P); ++mask) {
          if (std::popcount(mask) != k) continue;
          std::vector<int> set;
          for (int j = 0; j < P; ++j)
            if (mask >> j & 1u) set.push_back(j);
          best = std::max(best, prefill_value(u, set));
        }
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
  PrefillComparisonOptions o;
  o.prompt_len = 100;
  for (const PressEntry& e : press_table())
    for (double r : {0.3, 0.7}) {
      PressOptions p;
      p.id = e.id;
      p.compression_ratio = r;
      p.window_size = 16;
      p.lag_size = 16;
      o.presses.push_back(p);
    }
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
