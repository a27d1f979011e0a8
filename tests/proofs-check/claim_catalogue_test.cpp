// The claim catalogue, docs/checks.md and the tests stay in step: every claim names its function,
// its row in the docs (which links the function and the tests) and, for C1-C27, at least one test
// of this binary that feeds it a failing input; every such test is named by the catalogue.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "kvo/proofs_check/report.hpp"

using namespace kvo;

namespace {

std::set<std::string> registered_tests() {
  std::set<std::string> out;
  const auto* unit = ::testing::UnitTest::GetInstance();
  for (int s = 0; s < unit->total_test_suite_count(); ++s) {
    const auto* suite = unit->GetTestSuite(s);
    for (int t = 0; t < suite->total_test_count(); ++t)
      out.insert(std::string(suite->name()) + "." + suite->GetTestInfo(t)->name());
  }
  return out;
}

std::string docs_row(const std::string& doc_text, const ClaimInfo& c) {
  const std::string anchor = c.doc().substr(c.doc().find('#') + 1);
  const std::string start = "| <a id=\"" + anchor + "\"></a>" + c.id + " |";
  std::istringstream in(doc_text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(start, 0) == 0) return line;
  return "";
}

}  // namespace

TEST(ClaimCatalogue, NamesItsFunctionDocAndTests) {
  std::ifstream f(std::string(KVO_SOURCE_DIR) + "/docs/checks.md");
  ASSERT_TRUE(f) << "docs/checks.md not found";
  const std::string doc((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::set<std::string> tests = registered_tests();
  std::set<std::string> named;
  for (const ClaimInfo& c : claim_catalogue()) {
    SCOPED_TRACE(c.id);
    EXPECT_FALSE(c.function.empty());
    EXPECT_EQ(c.doc().rfind("docs/checks.md#", 0), 0u);
    const std::string row = docs_row(doc, c);
    ASSERT_FALSE(row.empty()) << "no row for " << c.id << " in docs/checks.md";
    const size_t at = row.find("[`" + c.function + "`](");
    ASSERT_NE(at, std::string::npos) << row;
    // The link goes to a source file that defines the function.
    const size_t from = row.find("](", at) + 2, to = row.find(')', from);
    std::ifstream src(std::string(KVO_SOURCE_DIR) + "/docs/" + row.substr(from, to - from));
    ASSERT_TRUE(src) << row.substr(from, to - from);
    const std::string code((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
    EXPECT_NE(code.find(" " + c.function + "("), std::string::npos) << c.function << " is not in " << row;
    if (c.id[0] == 'C') {
      EXPECT_FALSE(c.tests.empty()) << c.id << " has no test that makes it fail";
    }
    for (const std::string& t : c.tests) {
      EXPECT_TRUE(tests.count(t)) << t << " is not a test of this binary";
      EXPECT_NE(row.find("[`" + t + "`]("), std::string::npos) << row;
      named.insert(t);
    }
  }
  for (const std::string& t : tests)
    if (t.rfind("ClaimCanFail.", 0) == 0 && t != "ClaimCanFail.C7_SubmodularObjectivePasses" &&
        t != "ClaimCanFail.UncorruptedHeadHoldsEveryTheorem") {
      EXPECT_TRUE(named.count(t)) << t << " is not named by the claim catalogue";
    }
}
