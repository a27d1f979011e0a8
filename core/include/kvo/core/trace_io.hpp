// Reads and writes attention traces as safetensors files (layout in docs/trace-format.md):
// tensors layers.{l}.q [H,n,d], layers.{l}.k / .v [H_kv,n,d], layers.{l}.attn [H,n,n], tokens [n];
// metadata format = "kvoracle-trace", format_version = "1", attn_scale, prompt_len.
#pragma once
#include <string>

#include "kvo/core/safetensors.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

inline constexpr const char* kTraceFormat = "kvoracle-trace";
inline constexpr const char* kTraceVersion = "1";

// Validates the container, the layout and every value; kvo::Error naming the first problem.
Trace read_trace(const std::string& path);
// Writes atomically (temporary file, then rename). dtype: F32, F16 or BF16 for q, k, v, attn.
void write_trace(const std::string& path, const Trace& trace, DType dtype = DType::F32);

}  // namespace kvo
