// Internal: column generation for the offline assignment over rows produced on demand
// (docs/oracle.md §3c), for one head (solve_offline_streaming) and for H units sharing one heavy
// capacity (solve_offline_shared_streaming): each eviction step has H interchangeable rows.
#pragma once
#include <span>
#include <vector>

#include "kvo/oracle/offline_streaming.hpp"
#include "kvo/oracle/weight_rows.hpp"

namespace kvo::detail {

struct ColumnGeneration {
  std::vector<int> col_of;            // per row (step-major, H per step): its column j H + u
  std::vector<double> row_potential;  // per row
  long long work = 0, pairs = 0;      // augmentations of every round; candidate pairs in the last
  int rounds = 0, passes = 0;         // restricted solves; passes over the rows
  int table_stride = 0;               // the cost table's stride (0: no table)
  long long table_bytes = 0;          // and its size
};

// The units must have the same n (checked by the caller, as are budget and recent); steps
// h + r .. n - 1 each evict H columns.
ColumnGeneration column_generation(std::span<const WeightRows* const> units, int budget, int recent,
                                   const StreamingOfflineOptions& options);

}  // namespace kvo::detail
