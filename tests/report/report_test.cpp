#include "kvo/report/report.hpp"

#include <gtest/gtest.h>

using namespace kvo;

namespace {
Report two_tables() {
  Report r;
  r.line("heading");
  r.table({"k"}).row({integer(1)});
  r.line("between");
  r.table({"v"}).row({decimal(0.5, 1)});
  r.plot("p.svg", "<svg/>");
  return r;
}
}  // namespace

TEST(Report, TextIsLinesAndTablesInOrder) {
  EXPECT_EQ(two_tables().text(), "heading\nk\n-\n1\nbetween\n  v\n---\n0.5\n");
}

TEST(Report, MarkdownSeparatesBlocks) {
  EXPECT_EQ(two_tables().markdown(), "heading\n\n| k |\n|---|\n| 1 |\n\nbetween\n\n| v |\n|---|\n| 0.5 |\n");
}

TEST(Report, AppendKeepsEachTableWithItsPlace) {
  Report a = two_tables();
  a.append(two_tables());
  EXPECT_EQ(a.text(), two_tables().text() + two_tables().text());
  EXPECT_EQ(a.tables().size(), 4u);
  EXPECT_EQ(a.plots().size(), 2u);
  const nlohmann::json j = a.to_json();
  EXPECT_EQ(j["plots"], nlohmann::json({"p.svg", "p.svg"}));
  EXPECT_EQ(j["tables"][3]["rows"][0]["v"], 0.5);
  EXPECT_EQ(j["text"], a.text());
}
