#include "kvo/core/memory_limit.hpp"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "kvo/core/error.hpp"

namespace kvo {
namespace {

constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

std::uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return kUnlimited;
}

std::uint64_t cgroup_max() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string v;
  if (!(in >> v) || v == "max") return kUnlimited;
  try {
    return std::stoull(v);
  } catch (const std::exception&) {
    return kUnlimited;
  }
}

std::uint64_t parse_limit(const std::string& s) {
  size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &used);
  } catch (const std::exception&) {
    throw Error("KVO_MEMORY_LIMIT='" + s + "' is not a byte count (e.g. 4G, 512M)");
  }
  const std::string suffix = s.substr(used);
  const std::uint64_t mult = suffix.empty()                     ? 1
                             : suffix == "K" || suffix == "KiB" ? 1ull << 10
                             : suffix == "M" || suffix == "MiB" ? 1ull << 20
                             : suffix == "G" || suffix == "GiB" ? 1ull << 30
                                                                : 0;
  require(mult != 0 && v <= kUnlimited / mult, "KVO_MEMORY_LIMIT='" + s + "' is not a byte count (e.g. 4G, 512M)");
  return v * mult;
}

}  // namespace

MemoryLimit memory_limit() {
  MemoryLimit m{mem_available(), "MemAvailable"};
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < m.bytes)
    m = {static_cast<std::uint64_t>(rl.rlim_cur), "RLIMIT_AS"};
  if (const auto c = cgroup_max(); c < m.bytes) m = {c, "cgroup memory.max"};
  if (const char* env = std::getenv("KVO_MEMORY_LIMIT"); env && *env) {
    if (const auto e = parse_limit(env); e < m.bytes) m = {e, "KVO_MEMORY_LIMIT"};
  }
  return m;
}

void require_memory(std::uint64_t bytes, const std::string& what) {
  const MemoryLimit m = memory_limit();
  require(bytes <= m.bytes, what + " needs about " + format_bytes(bytes) + " in memory, more than the " +
                                format_bytes(m.bytes) + " available (" + m.source + ")");
}

std::string format_bytes(std::uint64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1ull << 20));
  else if (bytes >= (1ull << 10))
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1ull << 10));
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

}  // namespace kvo
