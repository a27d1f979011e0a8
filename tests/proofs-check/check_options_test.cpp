// The checks' sizes declared once (proofs-check/check_options.hpp): the table's names and flags
// agree, the sweep's text parses in the library with the CLI's rules, and a verify request's JSON
// form carries every size by the table's names.
#include "kvo/proofs_check/check_options.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "kvo/proofs_check/verify_run.hpp"
#include "test_support.hpp"

using namespace kvo;
using test::error_of;

TEST(CheckOptions, EverySizeHasOneNameAndTheFlagSpellsIt) {
  std::set<std::string> names;
  for (const CheckSizeEntry& e : check_size_table()) {
    std::string flag = "--" + std::string(e.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    EXPECT_EQ(e.flag, flag);
    EXPECT_TRUE(names.insert(std::string(e.name)).second) << e.name;
    EXPECT_EQ(find_check_size(e.name), &e);
  }
  EXPECT_EQ(names.size(), 10u);  // samples .. loss_random, power_law_bootstrap, cooccurrence_window
  EXPECT_EQ(find_check_size("sweep"), nullptr);
}

TEST(CheckOptions, TheSweepParsesAsTheCliTakesIt) {
  EXPECT_EQ(parse_sweep("0.1,20%"), (std::vector<double>{0.1, 0.2}));
  EXPECT_TRUE(parse_sweep("none").empty());
  EXPECT_EQ(parse_sweep(sweep_text(TraceChecksOptions{}.sweep)), TraceChecksOptions{}.sweep);
  EXPECT_EQ(sweep_text({}), "none");
  EXPECT_NE(error_of([] { parse_sweep("0.1,64"); }).find("fractions of n"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sweep("0.1,,0.2"); }).find("sweep"), std::string::npos);
}

TEST(CheckOptions, VerifyRequestsCarryEverySizeByName) {
  VerifyRequest req;
  req.traces = {"t.safetensors"};
  req.checks.loss_heads = 0;
  req.checks.ground = 9;
  const nlohmann::json j = req.to_json();
  for (const CheckSizeEntry& e : check_size_table()) EXPECT_TRUE(j.contains(std::string(e.name))) << e.name;
  const VerifyRequest back = VerifyRequest::from_json(j);
  EXPECT_EQ(back.checks.loss_heads, 0);
  EXPECT_EQ(back.checks.ground, 9);
  EXPECT_EQ(back.to_json(), j);
  TraceChecksOptions bad;
  bad.loss_heads = -1;
  EXPECT_NE(error_of([&] { bad.validate(); }).find("loss_heads must be >= 0"), std::string::npos);
}
