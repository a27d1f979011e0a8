// The exact offline optimum without the n x n matrix (docs/oracle.md §3c): the assignment of
// eviction steps to tokens solved by column generation over rows produced on demand, in
// O(n (d + candidates)) memory; and the one-pass evaluation of a schedule and its certificate.
#pragma once
#include <functional>
#include <span>
#include <vector>

#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/weight_rows.hpp"

namespace kvo {

// 0 <= recent <= budget <= n and n >= 1, or a kvo::Error naming the sizes.
void validate_offline_sizes(int n, int budget, int recent);

// A schedule's value sum_j (window + heavy gain of token j) and the LP-dual objective of the given
// prices (docs/oracle.md §4), from one pass over the rows 0..n-1 in order, summed in the order
// every offline solver and dual_bound share.
class ScheduleEvaluator {
 public:
  // kvo::Error when an end lies outside its token's window..n - 1, a step holds more than the heavy
  // capacity (-1: budget - recent; a unit of a shared budget passes the shared capacity, and its
  // caller checks the sum over units), or a price is negative or not finite.
  ScheduleEvaluator(int n, int budget, int recent, std::vector<int> end, std::vector<double> price,
                    int heavy_capacity = -1);
  void add(int i, std::span<const double> row);  // w(i, 0..i), for i = 0, 1, ..., n - 1
  double value() const;                          // after the last row
  double upper() const;
  double token_dual() const;  // upper() without the prices' term (budget - recent) * sum_t price_t

 private:
  double window() const;  // the forced windows' reward, summed per token in token order
  int n_, h_, r_;
  std::vector<int> end_;
  std::vector<double> price_;
  std::vector<double> window_, gain_, kept_gain_, paid_, mu_;  // per token
};

// value and upper of a schedule over `w` (one pass).
struct ScheduleCheck {
  double value = 0.0, upper = 0.0;
};
ScheduleCheck evaluate_schedule(const WeightRows& w, int budget, int recent, const std::vector<int>& end,
                                const std::vector<double>& price, int threads = 1);

struct StreamingOfflineOptions {
  int candidates = 8;  // per round, the most negative pairs added to each step's list (and each token's best)
  // After a restricted solve whose value fell since the last pruning, each step keeps only its
  // `keep` pairs of lowest reduced cost (and its newcomers and held pairs); 0 keeps every pair.
  int keep = 16;
  // With the cost table, also list at each step the `candidates` cheapest columns of the cache a
  // greedy schedule holds then (the schedule that evicts the cheapest column by the table); false:
  // only the globally cheapest pairs seed the lists.
  bool schedule_seed = true;
  int threads = 1;  // threads producing rows (<= 0: all cores)
  // Memory for a float copy of the pairs' costs, taken from the first pass, so that the pricing
  // rounds read it instead of recomputing the rows (docs/oracle.md §3d): at most table_bytes, and
  // at most table_bytes_per_slot per token and cache slot (n k of them per head; 0: no such cap),
  // which keeps the solver in O(n (d + k)) memory. 0 prices every round on recomputed rows.
  long long table_bytes = 4LL << 30;
  double table_bytes_per_slot = 48.0;  // every step's row at budgets from n / 20 up
  // The table holds every stride-th step's row, which bounds the costs of the steps before it from
  // below; 0: the smallest stride whose rows fit in the memory above (1: every step). A stride
  // whose rows do not fit prices every round on the rows.
  int table_stride = 0;
  // false: no closing pass evaluates the schedule, and value and upper are NaN; for a caller whose
  // own pass over the rows evaluates it with its certificate (order_against_optimum does).
  bool evaluate = true;
  std::function<void(int round, long long pairs)> on_round;  // after each restricted solve
};

// The optimum of solve_offline (same problem, same certificate) from rows produced on demand:
// a restricted assignment over a few candidate tokens per step, priced against every (step, token)
// pair by a backwards pass until no pair has a negative reduced cost. Each round is one pass over
// the rows; the method is "column-generation", `work` the augmentations of every round.
OfflineSolution solve_offline_streaming(const WeightRows& w, int budget, int recent,
                                        const StreamingOfflineOptions& options = {});

}  // namespace kvo
