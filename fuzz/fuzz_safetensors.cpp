// Fuzz target: the safetensors container and the trace reader on arbitrary bytes. Any input must
// end in a Trace or in one kvo::Error; anything else (a crash, a sanitizer report, another
// exception type) is a finding.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_support.hpp"
#include "kvo/core/safetensors.hpp"
#include "kvo/core/trace_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const unsigned char> bytes(data, size);
  try {
    const kvo::SafetensorsFile f(bytes, "fuzz");
    for (const auto& t : f.tensors()) {
      if (t.numel() > (1 << 20)) continue;  // bounded work per input
      kvo::fuzz::expect_clean([&] { (void)f.read_float(t); });
      kvo::fuzz::expect_clean([&] { (void)f.read_int32(t); });
    }
  } catch (const kvo::Error&) {
  }
  kvo::fuzz::expect_clean([&] { kvo::read_trace(bytes, "fuzz").validate(); });
  return 0;
}
