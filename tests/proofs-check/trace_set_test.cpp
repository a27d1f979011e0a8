// The traces of a several-trace verify (proofs-check/trace_set.hpp): directories expand in name
// order, report names are unique, and a staged report appears whole on commit or not at all.
#include "kvo/proofs_check/trace_set.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kvo/core/error.hpp"
#include "test_support.hpp"

using namespace kvo;
namespace fs = std::filesystem;
using kvo::test::fresh_dir;

TEST(TraceSet, DirectoriesExpandInNameOrderAndNamesAreUnique) {
  const fs::path d = fresh_dir("trace-set", "expand");
  for (const char* f : {"b.safetensors", "a.safetensors", "notes.txt"}) std::ofstream(d / f) << "x";
  const auto paths = expand_trace_paths({(d / "b.safetensors").string(), d.string()});
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(fs::path(paths[1]).filename(), "a.safetensors");
  EXPECT_EQ(trace_report_names(paths), (std::vector<std::string>{"b", "a", "b-2"}));
  EXPECT_EQ(trace_report_names({"/x/.hidden"}), (std::vector<std::string>{"trace.hidden"}));
  fs::create_directories(d / "empty");
  EXPECT_THROW(expand_trace_paths({(d / "empty").string()}), Error);
  fs::remove_all(d);
}

TEST(TraceSet, StagedReportAppearsWholeOrNotAtAll) {
  const fs::path d = fresh_dir("trace-set", "staged");
  {
    StagedReport abandoned(d.string());
    std::ofstream(fs::path(abandoned.stage("x")).string()) << "partial";
  }
  EXPECT_FALSE(fs::exists(d / ".kvoracle-partial"));
  EXPECT_FALSE(fs::exists(d / "report.md"));
  {
    StagedReport staged(d.string());
    fs::create_directories(staged.stage("t1"));
    std::ofstream(fs::path(staged.stage("t1")) / "report.md") << "one";
    TraceReportEntry e;
    e.name = "t1";
    e.meta = {{"trace", "t1.safetensors"}, {"n", 8}, {"layers", 1}, {"heads", 1}, {"budget", "2"}};
    staged.commit({e});
  }
  EXPECT_TRUE(fs::exists(d / "t1" / "report.md"));
  EXPECT_TRUE(fs::exists(d / "report.json"));
  EXPECT_FALSE(fs::exists(d / ".kvoracle-partial"));
  fs::remove_all(d);
}
