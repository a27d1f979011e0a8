#include "kvo/scaleout/team.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#ifdef KVO_WITH_MPI
#include <mpi.h>
#endif

namespace kvo::scaleout {
namespace {

Team g_world;
#ifdef KVO_WITH_MPI
bool g_mpi_active = false;

bool launched_by_mpi() {
  const char* off = std::getenv("KVO_MPI");
  if (off && std::string(off) == "0") return false;
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(var)) return true;
  return false;
}
#endif

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace

bool built_with_mpi() {
#ifdef KVO_WITH_MPI
  return true;
#else
  return false;
#endif
}

Team& Team::world() { return g_world; }

int Team::default_threads() const {
  const int online = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int mine = affinity_cpus();
  if (mine > 0 && mine < online) return mine;  // the launcher bound this rank to its own CPUs
  return std::max(1, online / std::max(1, local_size_));
}

#ifdef KVO_WITH_MPI
// Waits for a non-blocking collective by polling with short sleeps: Open MPI's blocking calls spin
// a core, which slows the ranks still working when ranks outnumber cores.
// seconds < 0: no deadline. Returns false when the deadline passed first.
static bool wait_for(MPI_Request& req, double seconds = -1) {
  const auto start = std::chrono::steady_clock::now();
  int done = 0;
  for (;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if (seconds >= 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
#endif

void Team::barrier() const {
#ifdef KVO_WITH_MPI
  if (!distributed()) return;
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  wait_for(req);
#endif
}

void Team::agree(const std::string& error) const { agree_within(error, -1); }

bool Team::agree_within(const std::string& error, double seconds) const {
  if (!distributed()) {
    if (!error.empty()) throw TeamError(error);
    return true;
  }
#ifdef KVO_WITH_MPI
  // The lowest failing rank, then its message broadcast from it.
  int mine = error.empty() ? size_ : rank_, first = size_;
  MPI_Request req;
  MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
  if (!wait_for(req, seconds)) return false;
  if (first == size_) return true;
  std::string text = error;
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, first, MPI_COMM_WORLD);
  text.resize(static_cast<size_t>(len));
  MPI_Bcast(text.data(), len, MPI_CHAR, first, MPI_COMM_WORLD);
  throw TeamError(first == 0 ? text : "rank " + std::to_string(first) + ": " + text);
#else
  (void)seconds;
  return true;
#endif
}

Session::Session(int& argc, char**& argv) {
#ifdef KVO_WITH_MPI
  if (!launched_by_mpi()) return;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  g_mpi_active = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &g_world.size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &g_world.local_size_);
  MPI_Comm_free(&node);
#else
  (void)argc;
  (void)argv;
#endif
}

Session::~Session() {
#ifdef KVO_WITH_MPI
  if (g_mpi_active) MPI_Finalize();
  g_mpi_active = false;
#endif
}

void Session::abort_job(int code) {
#ifdef KVO_WITH_MPI
  if (g_mpi_active) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

}  // namespace kvo::scaleout
