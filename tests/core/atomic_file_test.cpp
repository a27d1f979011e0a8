// Atomic outputs: a committed file appears whole, an abandoned one leaves nothing, and a process
// killed by SIGINT or SIGTERM while writing leaves neither the file nor its temporary.
#include "kvo/core/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "kvo/core/error.hpp"
#include "test_support.hpp"

using namespace kvo;
namespace fs = std::filesystem;
using kvo::test::fresh_dir;

namespace {

bool empty_dir(const fs::path& d) { return fs::directory_iterator(d) == fs::directory_iterator(); }

}  // namespace

TEST(AtomicFile, CommitPublishesAndAbandonLeavesNothing) {
  const auto d = fresh_dir("atomic", "commit");
  {
    AtomicFile f((d / "a.txt").string());
    f.stream() << "partial";
  }
  EXPECT_TRUE(empty_dir(d));
  write_file_atomic((d / "b.txt").string(), "whole\n");
  std::ifstream in(d / "b.txt");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "whole");
  EXPECT_THROW(write_file_atomic((d / "missing" / "c.txt").string(), "x"), Error);
  fs::remove_all(d);
}

TEST(AtomicFile, AnInterruptedWriterLeavesNoFile) {
  for (int sig : {SIGINT, SIGTERM}) {
    const auto d = fresh_dir("atomic", "signal" + std::to_string(sig));
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      install_interrupt_cleanup();
      AtomicFile f((d / "out.json").string());
      f.stream() << "{\"half\": ";
      f.stream().flush();
      ::raise(sig);
      ::_exit(0);  // not reached: the handler ends the process by the signal
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status)) << "status " << status;
    if (WIFSIGNALED(status)) {
      EXPECT_EQ(WTERMSIG(status), sig);
    }
    EXPECT_TRUE(empty_dir(d)) << "a file was left in " << d;
    fs::remove_all(d);
  }
}
