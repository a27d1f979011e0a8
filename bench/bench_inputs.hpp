// Seeded benchmark inputs: attention-like similarity matrices and synthetic traces.
#pragma once
#include <Eigen/Dense>
#include <cstdint>

#include "kvo/core/trace.hpp"

namespace kvo::bench {

// rows x cols matrix of heavy-tailed non-negative similarities (exponential, seeded).
Eigen::MatrixXd similarity(int rows, int cols, std::uint64_t seed);
// One layer, one head, n tokens, head_dim d synthetic heavy-hitter trace.
const Trace& trace(int n, int d);

}  // namespace kvo::bench
