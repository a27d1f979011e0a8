#include "kvo/gpu/device.hpp"

namespace kvo::gpu {

bool built_with_cuda() { return false; }

int device_count(std::string* why) {
  if (why) *why = "kvoracle was built without CUDA (KVO_CUDA=OFF, or nvcc was not found at configure time)";
  return 0;
}

}  // namespace kvo::gpu
