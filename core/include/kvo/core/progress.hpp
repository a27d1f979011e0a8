// A progress bar on stderr for long work; silent when stderr is not a terminal (CI logs stay
// clean) or when disabled. Thread-safe tick().
#pragma once
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

namespace kvo {

class Progress {
 public:
  Progress(std::string label, long total, bool enabled = true);
  ~Progress();
  void tick(long amount = 1);
  void finish();

 private:
  void draw(long done);
  std::string label_;
  long total_;
  bool enabled_;
  std::atomic<long> done_{0};
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_, last_;
  bool finished_ = false;
};

}  // namespace kvo
