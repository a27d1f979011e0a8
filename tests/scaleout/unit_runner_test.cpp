// The unit scheduler in one process: results come back in unit order whatever the threads, units
// go out largest first, a checkpoint's stored units are not recomputed, and a failing unit ends
// the run with one error naming it.
#include "kvo/scaleout/unit_runner.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "kvo/core/error.hpp"
#include "kvo/scaleout/checkpoint.hpp"
#include "kvo/scaleout/rank_team.hpp"
#include "kvo/scaleout/team.hpp"

using namespace kvo;
using namespace kvo::scaleout;

namespace {

UnitPlan plan_of(int n, const std::string& section = "s") {
  UnitPlan p{section, {}, {}};
  for (int u = 0; u < n; ++u) {
    p.names.push_back("unit " + std::to_string(u));
    p.cost.push_back(static_cast<double>(u % 5));
  }
  return p;
}

std::string scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("kvo_dist_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

}  // namespace

TEST(UnitRunner, OneProcessWithoutMpiIsATeamOfOne) {
  EXPECT_EQ(Team::world().size(), 1);
  EXPECT_TRUE(Team::world().root());
  EXPECT_GE(Team::world().default_threads(), 1);
  EXPECT_NO_THROW(Team::world().agree(""));
  EXPECT_THROW(Team::world().agree("bad trace"), Error);
}

// Without -j a run uses every CPU this process may use, as the CLI says ("default: all cores"):
// RankTeam(0) used to hand 0 to the scheduler, which ran one worker thread.
TEST(UnitRunner, ATeamWithoutAThreadCountUsesEveryCpu) {
  EXPECT_EQ(RankTeam(0, false).threads(), Team::world().default_threads());
  EXPECT_EQ(RankTeam(3, false).threads(), 3);
  const int cpus = Team::world().default_threads();
  if (cpus < 2) GTEST_SKIP() << "one CPU here: no second worker to see";
  // Each unit waits (up to 5 s) until another unit runs beside it.
  struct Overlapping final : WorkUnits {
    mutable std::atomic<int> running{0}, most{0};
    int size() const override { return 4; }
    std::string name(int u) const override { return "unit " + std::to_string(u); }
    std::string run_bytes(int) const override {
      const int now = ++running;
      for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
      }
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (most.load() < 2 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      --running;
      return "x";
    }
  } units;
  ASSERT_TRUE(RankTeam(0, false).run_units(units, "overlap", "overlap"));
  EXPECT_GE(units.most.load(), 2);
}

TEST(UnitRunner, ResultsComeBackInUnitOrderWhateverTheThreads) {
  const UnitPlan p = plan_of(37);
  for (int threads : {1, 2, 5}) {
    const auto r = run_units(p, [](int u) { return std::to_string(u * u); }, {threads, nullptr, nullptr});
    ASSERT_EQ(r.size(), 37u);
    for (int u = 0; u < 37; ++u) EXPECT_EQ(r[static_cast<size_t>(u)], std::to_string(u * u)) << threads;
  }
}

TEST(UnitRunner, UnitsGoOutLargestFirstWithTiesByIndex) {
  const UnitPlan p = plan_of(10);  // costs 0 1 2 3 4 0 1 2 3 4
  std::vector<int> order;
  std::mutex mu;
  run_units(p,
            [&](int u) {
              std::lock_guard lock(mu);
              order.push_back(u);
              return std::string();
            },
            {1, nullptr, nullptr});
  EXPECT_EQ(order, (std::vector<int>{4, 9, 3, 8, 2, 7, 1, 6, 0, 5}));
}

TEST(UnitRunner, ProgressTicksOncePerUnitResumedOnesIncluded) {
  const std::string dir = scratch("ticks");
  const Checkpoint ck(dir, {{"run", 1}});
  ck.store("s", 3, "stored");
  long ticks = 0;
  const auto r = run_units(plan_of(6), [](int) { return std::string("new"); }, {2, &ck, [&] { ++ticks; }});
  EXPECT_EQ(ticks, 6);
  EXPECT_EQ(r[3], "stored");
  std::filesystem::remove_all(dir);
}

TEST(UnitRunner, AResumedRunComputesOnlyTheUnitsNotStored) {
  const std::string dir = scratch("resume");
  const UnitPlan p = plan_of(20);
  auto work = [](int u) {
    std::string r(static_cast<size_t>(u), 'x');
    r.push_back('\0');  // results are bytes
    return r;
  };
  std::vector<std::string> full;
  {
    Checkpoint ck(dir, {{"run", "a"}});
    full = run_units(p, work, {2, &ck, nullptr});
    EXPECT_EQ(ck.stored("s"), 20);
  }
  // Drop some units as if the run had been killed before storing them.
  for (int u : {0, 7, 19}) {
    char name[32];
    std::snprintf(name, sizeof name, "/s/u%06d.bin", u);
    ASSERT_TRUE(std::filesystem::remove(dir + name));
  }
  Checkpoint ck(dir, {{"run", "a"}});
  EXPECT_EQ(ck.stored("s"), 17);
  std::atomic<int> computed{0};
  const auto again = run_units(p,
                               [&](int u) {
                                 ++computed;
                                 return work(u);
                               },
                               {2, &ck, nullptr});
  EXPECT_EQ(computed.load(), 3);
  EXPECT_EQ(again, full);
  std::filesystem::remove_all(dir);
}

TEST(UnitRunner, AFailingUnitEndsTheRunNamingIt) {
  try {
    run_units(plan_of(8),
              [](int u) -> std::string {
                if (u == 5) throw Error("no such head");
                return "ok";
              },
              {2, nullptr, nullptr});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unit 5: no such head");
  }
}

TEST(Checkpoint, ADifferentIdentityIsRefusedNamingTheFirstDifference) {
  const std::string dir = scratch("identity");
  { Checkpoint ck(dir, {{"command", "verify"}, {"arguments", {{"--budget", "20%"}}}}); }
  EXPECT_NO_THROW(Checkpoint(dir, {{"command", "verify"}, {"arguments", {{"--budget", "20%"}}}}));
  try {
    Checkpoint(dir, {{"command", "verify"}, {"arguments", {{"--budget", "10%"}}}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("arguments.--budget is 20% in the checkpoint, 10% in this run"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Checkpoint(dir, {{"command", "oracle"}, {"arguments", {{"--budget", "20%"}}}}), Error);
  std::filesystem::remove_all(dir);
}

// Issue 30: a bit flipped in a stored result used to be read back as a valid unit (the report
// changed and the run exited 0); each unit now carries its payload's sha256.
TEST(Checkpoint, AFlippedBitInAStoredResultIsRefusedNamingTheFile) {
  const std::string dir = scratch("flipped");
  Checkpoint ck(dir, {{"run", 1}});
  const std::string payload = "a result of 32 bytes, say a CBOR";
  ck.store("t0", 4, payload);
  const std::string path = dir + "/t0/u000004.bin";
  const auto size = std::filesystem::file_size(path);
  for (std::uintmax_t at : {size - 1, size - payload.size(), size - payload.size() / 2}) {
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(static_cast<std::streamoff>(at));
      char c = 0;
      f.get(c);
      f.seekp(static_cast<std::streamoff>(at));
      f.put(static_cast<char>(c ^ 0x04));
    }
    try {
      (void)ck.load("t0", 4);
      ADD_FAILURE() << "a flipped bit at byte " << at << " was read back as a result";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find("checksum"), std::string::npos) << what;
      EXPECT_NE(what.find("delete it"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    ck.store("t0", 4, payload);  // restore the unit for the next position
    EXPECT_EQ(*ck.load("t0", 4), payload);
  }
  // A valid unit file in another unit's place is not that unit's result.
  std::filesystem::copy_file(path, dir + "/t0/u000005.bin");
  EXPECT_THROW((void)ck.load("t0", 5), Error);
  std::filesystem::remove_all(dir);
}

TEST(Checkpoint, ADamagedUnitFileOrAForeignDirectoryIsRefused) {
  const std::string dir = scratch("damaged");
  Checkpoint ck(dir, {{"run", 1}});
  ck.store("t0", 2, std::string("abc\0def", 7));
  EXPECT_EQ(*ck.load("t0", 2), std::string("abc\0def", 7));
  EXPECT_FALSE(ck.load("t0", 3).has_value());
  std::filesystem::resize_file(dir + "/t0/u000002.bin", 20);
  EXPECT_THROW(ck.load("t0", 2), Error);
  const std::string other = scratch("foreign");
  std::filesystem::create_directories(other);
  { std::ofstream(other + "/notes.txt") << "mine"; }
  EXPECT_THROW(Checkpoint(other, {{"run", 1}}), Error);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(other);
}
