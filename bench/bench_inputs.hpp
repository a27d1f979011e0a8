// Seeded benchmark inputs: attention-like similarity matrices and synthetic traces.
#pragma once
#include <Eigen/Dense>
#include <cstdint>

#include "kvo/core/trace.hpp"

namespace kvo::bench {

// rows x cols matrix of heavy-tailed non-negative similarities (exponential, seeded).
Eigen::MatrixXd similarity(int rows, int cols, std::uint64_t seed);
// One layer of `heads` query heads (each its own KV head), n tokens, head_dim d: a synthetic
// heavy-hitter trace, built once per shape.
const Trace& trace(int n, int d, int heads = 1);

// Resident memory of this process now and its peak since the last reset_peak_rss() (Linux
// /proc/self/status VmRSS / VmHWM; writing 5 to /proc/self/clear_refs resets the peak).
std::uint64_t rss_bytes();
std::uint64_t peak_rss_bytes();
void reset_peak_rss();

}  // namespace kvo::bench
