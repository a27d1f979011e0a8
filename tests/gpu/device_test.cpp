#include "kvo/gpu/device.hpp"

#include <gtest/gtest.h>

using namespace kvo::gpu;

// Without a device the API must say why; with one, it counts it.
TEST(GpuDevice, ReportsDevicesOrExplainsTheirAbsence) {
  std::string why;
  const int n = device_count(&why);
  if (n == 0) {
    EXPECT_FALSE(why.empty());
    if (!built_with_cuda()) {
      EXPECT_NE(why.find("without CUDA"), std::string::npos);
    }
    GTEST_SKIP() << "no CUDA device: " << why;
  }
  EXPECT_TRUE(built_with_cuda());
  EXPECT_GT(n, 0);
}
