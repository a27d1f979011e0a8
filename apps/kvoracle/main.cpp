// kvoracle: checks, on attention traces, whether greedy KV-cache eviction is as good as theory says.
#include "cli.hpp"
#include "kvo/core/atomic_file.hpp"

int main(int argc, char** argv) {
  kvo::install_interrupt_cleanup();  // an interrupted run leaves no partial output file
  return kvo::cli::run_cli(argc, argv);
}
