// kvoracle: checks, on attention traces, whether greedy KV-cache eviction is as good as theory says.
#include "cli.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/scaleout/team.hpp"

int main(int argc, char** argv) {
  kvo::install_interrupt_cleanup();              // an interrupted run leaves no partial output file
  const kvo::scaleout::Session mpi(argc, argv);  // MPI_Init under mpirun/srun (a no-op otherwise)
  return kvo::cli::run_cli(argc, argv);
}
