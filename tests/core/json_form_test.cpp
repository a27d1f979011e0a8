// JsonForm (core/json_fields.hpp): a request type's fields declared once give its JSON form both
// ways; reading starts from the defaults, takes a subset and names what it refuses.
#include <gtest/gtest.h>

#include "kvo/core/json_fields.hpp"
#include "kvo/core/request_json.hpp"
#include "test_support.hpp"

using namespace kvo;
using test::error_of;

namespace {

struct Toy {
  int n = 3;
  std::vector<double> xs = {0.5};
  PolicyId policy = PolicyId::H2O;
  RunOptions run;
};

JsonForm<Toy> toy_form() {
  JsonForm<Toy> f("toy request");
  f.field("n", &Toy::n).field("xs", &Toy::xs);
  policy_field(f, "policy", &Toy::policy);
  run_field(f, "run", &Toy::run);
  return f;
}

}  // namespace

TEST(JsonForm, WritesEveryFieldAndReadsASubsetFromTheDefaults) {
  const JsonForm<Toy> f = toy_form();
  Toy t;
  t.n = 7;
  t.policy = PolicyId::Tova;
  t.run.budget = "12";
  const nlohmann::json j = f.write(t);
  EXPECT_EQ(j.size(), 4u);
  EXPECT_EQ(j["policy"], policy_name(PolicyId::Tova));
  EXPECT_EQ(f.write(f.read(j)), j);
  const Toy partial = f.read({{"n", 9}});
  EXPECT_EQ(partial.n, 9);
  EXPECT_EQ(partial.xs, std::vector<double>{0.5});
  EXPECT_EQ(partial.policy, PolicyId::H2O);
}

TEST(JsonForm, RefusesUnknownFieldsWrongTypesAndUnknownNames) {
  const JsonForm<Toy> f = toy_form();
  EXPECT_EQ(error_of([&] { f.read({{"m", 1}}); }), "toy request: unknown field 'm'");
  EXPECT_EQ(error_of([&] { f.read({{"n", "x"}}); }), "toy request: 'n' has the wrong type: \"x\"");
  EXPECT_EQ(error_of([&] { f.read(nlohmann::json::array()); }), "toy request: expected a JSON object");
  EXPECT_NE(error_of([&] { f.read({{"policy", "nope"}}); }).find("unknown policy 'nope'"), std::string::npos);
  EXPECT_NE(error_of([&] { f.read({{"run", {{"budgett", "1"}}}}); }).find("budgett"), std::string::npos);
}
