// Shared by the fuzz targets: run a step whose only acceptable failure is one kvo::Error (any
// other exception escapes to libFuzzer as a finding).
#pragma once
#include "kvo/core/error.hpp"

namespace kvo::fuzz {

template <typename F>
void expect_clean(F&& step) {
  try {
    step();
  } catch (const kvo::Error&) {
  }
}

}  // namespace kvo::fuzz
