#include "kvo/report/table.hpp"

#include <gtest/gtest.h>

using namespace kvo;

TEST(Table, TextRightAlignsUnderARule) {
  Table t({"name", "value"});
  t.row({"h2o", decimal(0.123456)});
  t.row({"window", integer(12)});
  EXPECT_EQ(t.text(),
            "  name   value\n"
            "--------------\n"
            "   h2o  0.1235\n"
            "window      12\n");
}

TEST(Table, ShortRowsLeaveCellsEmpty) {
  Table t({"a", "b"});
  t.row({"x"});
  EXPECT_EQ(t.text(), "a  b\n----\nx   \n");
}

TEST(Table, JsonKeepsExactNumbersAndText) {
  Table t({"policy", "ratio", "certified"});
  t.row({"h2o", decimal(1.0 / 3.0, 2), "yes"});
  const nlohmann::json j = t.to_json();
  EXPECT_EQ(j["columns"], nlohmann::json({"policy", "ratio", "certified"}));
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["policy"], "h2o");
  EXPECT_DOUBLE_EQ(j["rows"][0]["ratio"].get<double>(), 1.0 / 3.0);  // not the printed 0.33
  EXPECT_EQ(j["rows"][0]["certified"], "yes");
}

TEST(Table, MarkdownEscapesBars) {
  Table t({"a|b"});
  t.row({"x|y"});
  EXPECT_EQ(t.markdown(), "| a\\|b |\n|---|\n| x\\|y |\n");
}
