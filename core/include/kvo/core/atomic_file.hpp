// Writes an output file atomically: the content goes to a temporary file beside the target,
// which is renamed over it only on commit(); otherwise the temporary is removed, also when the
// process is interrupted (SIGINT, SIGTERM, SIGHUP) once install_interrupt_cleanup() has run.
#pragma once
#include <fstream>
#include <string>

namespace kvo {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // kvo::Error when the temporary cannot be created
  ~AtomicFile();                          // removes the temporary unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ofstream& stream() { return out_; }
  void commit();  // flush, close and rename; kvo::Error on failure

 private:
  std::string path_, tmp_;
  std::ofstream out_;
  bool committed_ = false;
  int slot_ = -1;  // in the interrupt handler's table of live temporaries
};

// Installs handlers for SIGINT, SIGTERM and SIGHUP that remove every live temporary of an
// AtomicFile, print "kvoracle: interrupted" and end the process by the same signal (exit status
// 128 + signal in a shell). The kvoracle CLI installs them first thing.
void install_interrupt_cleanup();
// Cleans up without the message (the non-zero ranks of an MPI job, which mpirun stops itself).
void quiet_interrupts();

// Writes the whole string atomically.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace kvo
