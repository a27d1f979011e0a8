// The model's thread count: what is set is what the next parallel loop gets; a count below one is
// refused in one line.
#include "kvo/model/compute_threads.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include "kvo/core/error.hpp"

namespace kvo::model {
namespace {

int team_size() {
  int size = 0;
#pragma omp parallel
  {
#pragma omp single
    size = omp_get_num_threads();
  }
  return size;
}

TEST(ComputeThreads, TheNextParallelLoopGetsTheCountSet) {
  const int before = compute_threads();
  set_compute_threads(3);
  EXPECT_EQ(compute_threads(), 3);
  EXPECT_EQ(team_size(), 3);
  set_compute_threads(1);
  EXPECT_EQ(team_size(), 1);
  set_compute_threads(before);
}

TEST(ComputeThreads, ACountBelowOneIsRefused) {
  try {
    set_compute_threads(0);
    FAIL() << "0 threads accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "compute threads must be >= 1, got 0");
  }
}

}  // namespace
}  // namespace kvo::model
