#include "kvo/model/compute_threads.hpp"

#include <omp.h>

#include <string>

#include "kvo/core/error.hpp"

namespace kvo::model {

void set_compute_threads(int threads) {
  require(threads >= 1, "compute threads must be >= 1, got " + std::to_string(threads));
  omp_set_num_threads(threads);
}

int compute_threads() { return omp_get_max_threads(); }

}  // namespace kvo::model
