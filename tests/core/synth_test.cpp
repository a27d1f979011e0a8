#include "kvo/core/synth.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"

using namespace kvo;

TEST(Synth, IsDeterministicPerSeed) {
  SynthOptions o;
  o.tokens = 64;
  const Trace a = synthesize(o), b = synthesize(o);
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(a.k, b.k);
  o.seed = 1;
  EXPECT_NE(synthesize(o).k, a.k);
  EXPECT_NO_THROW(a.validate());
}

// Heavy hitters: the top 10% of keys by accumulated dense attention hold most of the mass, and
// the sinks are among them.
TEST(Synth, HasHeavyHittersAndSinks) {
  SynthOptions o;
  const Trace tr = synthesize(o);
  const Eigen::MatrixXd a = dense_attention(HeadView(tr, 0, 0));
  Eigen::VectorXd acc = a.colwise().sum().transpose();
  std::vector<double> s(acc.data(), acc.data() + acc.size());
  std::sort(s.rbegin(), s.rend());
  double top = 0;
  for (int j = 0; j < o.tokens / 10; ++j) top += s[j];
  EXPECT_GT(top / acc.sum(), 0.5);
  EXPECT_GE(acc[0], s[o.tokens / 10]);
}

TEST(Synth, RejectsBadSizes) {
  SynthOptions o;
  o.heads = 3;
  o.kv_heads = 2;
  EXPECT_THROW(synthesize(o), Error);
  o = {};
  o.head_dim = 4;
  EXPECT_THROW(synthesize(o), Error);
}
