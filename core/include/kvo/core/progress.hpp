// A progress bar on stderr for long work; silent when stderr is not a terminal (CI logs stay
// clean) or when disabled, unless log lines are switched on (rank 0 of an MPI job, whose stderr is
// a pipe to mpirun or a Slurm log): then one line at every tenth of the work. Thread-safe tick().
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
  // Process-wide: draw a line at every tenth instead of nothing when stderr is not a terminal.
  static void log_lines_when_piped(bool on);

 private:
  void draw(long done);
  std::string label_;
  long total_;
  bool enabled_, lines_;
  long last_tenth_ = -1;
  std::atomic<long> done_{0};
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_, last_;
  bool finished_ = false;
};

}  // namespace kvo
