// The processes of one kvoracle run: a single process, or the ranks of MPI_COMM_WORLD when the
// program was started by mpirun or srun (and built with MPI). Rank 0 reads and writes the outputs;
// every rank computes work units (unit_runner.hpp).
#pragma once
#include <string>

#include "kvo/core/error.hpp"

namespace kvo::scaleout {

// An error every rank of the team knows of (agree(), run_units()), thrown on every rank: rank 0
// prints it and ends the job non-zero, the other ranks stay silent.
class TeamError : public Error {
 public:
  explicit TeamError(const std::string& what) : Error(what) {}
};

class Team {
 public:
  // The team of this process: MPI_COMM_WORLD inside a Session started under mpirun/srun, else one.
  static Team& world();
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  bool distributed() const { return size_ > 1; }
  // Worker threads per rank when -j is not given: the CPUs this process may run on (its affinity
  // mask), divided by the ranks of this node that share them when the launcher did not bind ranks.
  int default_threads() const;
  // Collective: every rank passes its error ("" when it has none). When any rank has one, every
  // rank throws TeamError with the lowest failing rank's message ("rank R: " before it when R > 0).
  // Ranks that fail in the same way report one line, not one per rank. In one process: throws
  // TeamError when `error` is not empty.
  void agree(const std::string& error) const;
  // The same, giving up after `seconds` when some rank does not join (it is busy elsewhere: the
  // error was this rank's alone); returns false then, having thrown nothing.
  bool agree_within(const std::string& error, double seconds) const;
  // Collective: returns when every rank has called it (waiting without spinning a core).
  void barrier() const;

 private:
  friend class Session;
  int rank_ = 0, size_ = 1, local_size_ = 1;
};

// Initialises MPI for the program's lifetime when it was launched by mpirun/srun (the launcher's
// environment: OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK) and kvoracle was built with MPI; a no-op
// otherwise. KVO_MPI=0 in the environment keeps a launched process on its own.
class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // Ends the whole job at once (MPI_Abort); used when rank 0 fails while other ranks may wait.
  [[noreturn]] static void abort_job(int code);
};

// True when this build can distribute over MPI.
bool built_with_mpi();

}  // namespace kvo::scaleout
