// How many threads the model's matrix products and per-head loops use (OpenMP's team size). The
// CLI sets it from -j; the Python module leaves it to torch's setting, which reaches the same pool.
#pragma once

namespace kvo::model {

// threads >= 1, else kvo::Error naming the value.
void set_compute_threads(int threads);

// The team size the model's next parallel loop gets.
int compute_threads();

}  // namespace kvo::model
