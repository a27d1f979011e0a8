// Internal: column generation for the offline assignment over rows produced on demand
// (docs/oracle.md §3c, §3d), for one head (solve_offline_streaming) and for H units sharing one heavy
// capacity (solve_offline_shared_streaming): each eviction step has H interchangeable rows. Its
// parts are tested alone (tests/oracle/column_generation_test.cpp): the restricted assignment
// (restricted_assignment.hpp), the cost table (cost_table.hpp) and the pricer with its seeding
// (column_pricer.hpp); ColumnGenerator runs the rounds.
#pragma once
#include <span>
#include <vector>

#include "column_pricer.hpp"
#include "cost_table.hpp"
#include "kvo/oracle/offline_streaming.hpp"
#include "kvo/oracle/weight_rows.hpp"
#include "restricted_assignment.hpp"

namespace kvo::detail {

struct ColumnGeneration {
  std::vector<int> col_of;            // per row (step-major, H per step): its column j H + u
  std::vector<double> row_potential;  // per row
  long long work = 0, pairs = 0;      // augmentations of every round; candidate pairs in the last
  int rounds = 0, passes = 0;         // restricted solves; passes over the rows
  int table_stride = 0;               // the cost table's stride (0: no table)
  long long table_bytes = 0;          // and its size
};

// The rounds: a seeding pass over the rows (which fills the cost table), then restricted solves
// priced on the table until it finds no negative pair, then exact passes until the table or an
// exact pass proves the potentials feasible (or, without a table, exact passes alone).
class ColumnGenerator {
 public:
  // The units must have the same n (checked by the caller, as are budget and recent); steps
  // h + r .. n - 1 each evict H columns (unit u's token j is column j H + u).
  ColumnGenerator(std::span<const WeightRows* const> units, int budget, int recent,
                  const StreamingOfflineOptions& options);
  ColumnGeneration run();

 private:
  struct PassResult {
    long long added = 0, negative = 0;
  };
  // Columns arrived by eviction step `step`.
  size_t arrived(int step) const;
  PassResult exact_pass(bool seed, bool refresh, double relative_slack);
  PassResult table_pass();
  void solve(bool may_prune);

  std::span<const WeightRows* const> units_;
  const StreamingOfflineOptions& o_;
  int H_, n_, r_, first_, steps_;
  size_t cols_;
  RestrictedAssignment ra_;
  CostTable table_;
  ColumnPricer pricer_;
  std::vector<double> suffix_;  // L_j(t) of the step a pass is at
  ColumnGeneration out_;
  long long pairs_ = 0;
  bool capped_warm_ = false;
  double pruned_at_;
};

// ColumnGenerator(units, budget, recent, options).run().
ColumnGeneration column_generation(std::span<const WeightRows* const> units, int budget, int recent,
                                   const StreamingOfflineOptions& options);

}  // namespace kvo::detail
