// Reads and writes attention traces as safetensors files (layout in docs/trace-format.md):
// tensors layers.{l}.q [H,n,d], layers.{l}.k / .v [H_kv,n,d], layers.{l}.attn [H,n,n], tokens [n];
// metadata format = "kvoracle-trace", format_version = "1", attn_scale, prompt_len.
#pragma once
#include <span>
#include <string>

#include "kvo/core/safetensors.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

inline constexpr const char* kTraceFormat = "kvoracle-trace";
inline constexpr const char* kTraceVersion = "1";

// Validates the container, the layout and every value (a NaN or Inf is reported with its layer,
// head, position and dimension); refuses, before reading any tensor, a trace that does not fit in
// memory (kvo/core/memory_limit.hpp). kvo::Error naming the first problem.
Trace read_trace(const std::string& path);
// The same over bytes in memory (`name` appears in errors), and over an opened container.
Trace read_trace(std::span<const unsigned char> bytes, const std::string& name);
Trace trace_from(const SafetensorsFile& file, const std::string& name);
// Writes atomically (temporary file, then rename). dtype: F32, F16 or BF16 for q, k, v, attn.
void write_trace(const std::string& path, const Trace& trace, DType dtype = DType::F32);

}  // namespace kvo
