#include "kvo/core/synth.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "test_support.hpp"

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

TEST(Synth, OptionsAreDeclaredOnceWithTheirJsonForm) {
  SynthOptions o;
  o.kv_heads = 1;
  o.zipf = 0.7;
  o.seed = 99;
  const auto& schema = synth_options_schema();
  const nlohmann::json j = schema.to_json(o);
  EXPECT_EQ(j.size(), schema.fields().size());
  for (const auto& f : schema.fields()) {
    std::string flag = "--" + f.name();
    std::replace(flag.begin(), flag.end(), '_', '-');
    EXPECT_EQ(f.flag(), flag);
    EXPECT_TRUE(j.contains(f.name()));
  }
  EXPECT_EQ(schema.to_json(schema.from_json(j)), j);
  EXPECT_EQ(schema.from_json({{"zipf", 2}}).zipf, 2.0);  // an integer where a float is wanted
  EXPECT_NE(test::error_of([&] {
              schema.from_json({{"heads", 2.5}});
            }).find("'heads' has the wrong type"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] {
              schema.from_json({{"head-dim", 16}});
            }).find("unknown field 'head-dim'"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { schema.from_json({{"seed", -1}}); }).find("seed must be >= 0"), std::string::npos);
  SynthOptions bad;
  bad.head_dim = 8;
  EXPECT_NE(test::error_of([&] { synthesize(bad); }).find("head_dim must be >= 10"), std::string::npos);
}
