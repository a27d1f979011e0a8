#include "kvo/core/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace kvo {
namespace {
std::atomic<bool> g_log_lines{false};
}

void Progress::log_lines_when_piped(bool on) { g_log_lines = on; }

Progress::Progress(std::string label, long total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled && (isatty(STDERR_FILENO) != 0 || g_log_lines)),
      lines_(isatty(STDERR_FILENO) == 0),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { finish(); }

void Progress::tick(long amount) {
  const long done = done_ += amount;
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  draw(done);
}

void Progress::draw(long done) {
  const double frac = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  const int width = 30;
  const int fill = static_cast<int>(frac * width);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (lines_) {
    const long tenth = static_cast<long>(frac * 10.0);
    if (tenth == last_tenth_) return;
    last_tenth_ = tenth;
    std::fprintf(stderr, "%s: %ld/%ld (%ld%%) %.1fs\n", label_.c_str(), done, total_, tenth * 10, secs);
    std::fflush(stderr);
    return;
  }
  std::string bar(static_cast<size_t>(fill), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r%s [%s] %ld/%ld %.1fs", label_.c_str(), bar.c_str(), done, total_, secs);
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  draw(done_.load());
  if (!lines_) std::fputc('\n', stderr);
}

}  // namespace kvo
