// The one table of press parameters (core/press_parameters.hpp): it declares every parameter a
// press reads, with PressOptions' defaults, and its JSON form round-trips and refuses what it
// does not know.
#include "kvo/core/press_parameters.hpp"

#include <gtest/gtest.h>

#include "kvo/core/text_list.hpp"
#include "test_support.hpp"

using namespace kvo;
using test::error_of;

TEST(PressParameters, EveryParameterAPressReadsIsInTheTable) {
  for (const PressEntry& p : press_table())
    for (const std::string& item : split_list(std::string(p.reads), "reads")) {
      const std::string name = item.substr(0, item.find(' '));  // "n_sink (num_sinks)" -> n_sink
      EXPECT_NE(press_parameters_schema().find(name), nullptr) << p.name << " reads " << name;
    }
  EXPECT_EQ(press_parameters_schema().find("compression_ratio"), nullptr);  // the grid's, not a parameter
}

TEST(PressParameters, DefaultsAreKvpressDefaultsAndJsonRoundTrips) {
  const nlohmann::json defaults = press_parameters_schema().to_json(PressOptions{});
  EXPECT_EQ(defaults.size(), press_parameters_schema().fields().size());
  EXPECT_EQ(defaults["window_size"], 64);
  EXPECT_EQ(defaults["n_sink"], 4);
  EXPECT_EQ(defaults["seed"], 0);
  PressOptions o;
  o.window_size = 7;
  o.seed = 12345678901ULL;
  const PressOptions back = press_parameters_schema().from_json(press_parameters_schema().to_json(o));
  EXPECT_EQ(back.window_size, 7);
  EXPECT_EQ(back.seed, 12345678901ULL);
  EXPECT_EQ(press_parameters_schema().from_json({{"beta", 3}}).beta, 3);
}

TEST(PressParameters, UnknownWrongTypeAndOutOfRangeAreRefusedNamingTheParameter) {
  EXPECT_NE(error_of([] {
              press_parameters_schema().from_json({{"windowsize", 3}});
            }).find("unknown field 'windowsize'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              press_parameters_schema().from_json({{"beta", "3"}});
            }).find("'beta' has the wrong type"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              press_parameters_schema().from_json({{"beta", 2.5}});
            }).find("'beta' has the wrong type"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              press_parameters_schema().from_json({{"seed", -1}});
            }).find("seed must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              press_parameters_schema().from_json({{"n_sink", 1LL << 40}});
            }).find("n_sink is out of range"),
            std::string::npos);
}
