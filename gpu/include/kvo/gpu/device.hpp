// CUDA device discovery: whether kvoracle was built with CUDA and which devices it can use.
#pragma once
#include <string>

namespace kvo::gpu {

bool built_with_cuda();
// Number of usable CUDA devices (0 without CUDA or without a device); `why` explains a zero.
int device_count(std::string* why = nullptr);

}  // namespace kvo::gpu
