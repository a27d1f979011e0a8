// Refuses work that cannot fit in memory before any large allocation: the readers estimate what
// they will hold from a file's header and ask here. The limit is the smallest of the memory the
// kernel reports available, the address-space rlimit, the cgroup's memory.max, and
// KVO_MEMORY_LIMIT (bytes, or with a K/M/G suffix; for tests and shared machines).
#pragma once
#include <cstdint>
#include <string>

namespace kvo {

// The limit in bytes and where it comes from ("MemAvailable", "RLIMIT_AS", "cgroup memory.max",
// "KVO_MEMORY_LIMIT").
struct MemoryLimit {
  std::uint64_t bytes = 0;
  std::string source;
};
MemoryLimit memory_limit();

// kvo::Error "<what> needs about X GiB in memory, more than the Y GiB available (<source>)" when
// `bytes` exceeds the limit.
void require_memory(std::uint64_t bytes, const std::string& what);

// "1.50 GiB", "12.0 MiB", "512 B".
std::string format_bytes(std::uint64_t bytes);

}  // namespace kvo
