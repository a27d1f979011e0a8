#include "kvo/core/atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "kvo/core/error.hpp"

namespace kvo {
namespace {

// Live temporaries, readable from a signal handler: a slot is claimed (1), filled, then published
// (2); the handler only reads published slots and calls unlink(), which is async-signal-safe.
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
std::atomic<int> g_state[kSlots];

int register_temporary(const std::string& tmp) {
  if (tmp.size() >= kPathMax) return -1;
  for (int s = 0; s < kSlots; ++s) {
    int expected = 0;
    if (g_state[s].compare_exchange_strong(expected, 1)) {
      std::memcpy(g_paths[s], tmp.c_str(), tmp.size() + 1);
      g_state[s].store(2, std::memory_order_release);
      return s;
    }
  }
  return -1;  // table full: the temporary is still removed on normal exits and exceptions
}

void release_temporary(int slot) {
  if (slot >= 0) g_state[slot].store(0, std::memory_order_release);
}

std::atomic<bool> g_quiet_interrupt{false};

extern "C" void on_interrupt(int sig) {
  for (int s = 0; s < kSlots; ++s)
    if (g_state[s].load(std::memory_order_acquire) == 2) ::unlink(g_paths[s]);
  static const char msg[] = "\nkvoracle: interrupted\n";
  if (!g_quiet_interrupt.load()) {
    [[maybe_unused]] const auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  slot_ = register_temporary(tmp_);
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_.good()) release_temporary(slot_);
  require(out_.good(), "cannot write '" + path_ + "' (is the folder there and writable?)");
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    release_temporary(slot_);
  }
}

void AtomicFile::commit() {
  out_.flush();
  const bool ok = out_.good();
  out_.close();
  require(ok && !out_.fail(), "writing '" + path_ + "' failed (disk full?)");
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  require(!ec, "cannot rename the temporary file onto '" + path_ + "': " + ec.message());
  committed_ = true;
  release_temporary(slot_);
}

void quiet_interrupts() { g_quiet_interrupt = true; }

void install_interrupt_cleanup() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

void write_file_atomic(const std::string& path, const std::string& content) {
  AtomicFile f(path);
  f.stream().write(content.data(), static_cast<std::streamsize>(content.size()));
  f.commit();
}

}  // namespace kvo
