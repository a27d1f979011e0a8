#include <cuda_runtime.h>

#include "kvo/gpu/device.hpp"

namespace kvo::gpu {

bool built_with_cuda() { return true; }

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why) *why = std::string("the CUDA runtime says: ") + cudaGetErrorString(err);
    return 0;
  }
  if (n == 0 && why) *why = "the CUDA runtime finds none";
  return n;
}

}  // namespace kvo::gpu
