// The checks' sizes declared once (VerifyRequest::schema()): their names and flags
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

// The sizes among VerifyRequest's fields (FieldInfo::use).
std::vector<const Field<VerifyRequest>*> check_sizes() {
  std::vector<const Field<VerifyRequest>*> out;
  for (const auto& f : VerifyRequest::schema().fields())
    if (f.info.use == kCheckSizeUse) out.push_back(&f);
  return out;
}

TEST(CheckOptions, EverySizeHasOneNameAndTheFlagSpellsIt) {
  std::set<std::string> names;
  for (const auto* f : check_sizes()) {
    std::string flag = "--" + f->name();
    std::replace(flag.begin(), flag.end(), '_', '-');
    EXPECT_EQ(f->flag(), flag);
    EXPECT_TRUE(names.insert(f->name()).second) << f->name();
    EXPECT_EQ(f->kind, "integer") << f->name();
  }
  EXPECT_EQ(names.size(), 10u);  // samples .. loss_random, power_law_bootstrap, cooccurrence_window
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
  for (const auto* f : check_sizes()) EXPECT_TRUE(j.contains(f->name())) << f->name();
  const VerifyRequest back = VerifyRequest::from_json(j);
  EXPECT_EQ(back.checks.loss_heads, 0);
  EXPECT_EQ(back.checks.ground, 9);
  EXPECT_EQ(back.to_json(), j);
  TraceChecksOptions bad;
  bad.loss_heads = -1;
  EXPECT_NE(error_of([&] { bad.validate(); }).find("loss_heads must be >= 0"), std::string::npos);
}
