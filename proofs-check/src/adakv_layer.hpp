// Internal: Ada-KV's claims (ADA1-ADA3) on one layer. At sampled queries every query head's
// attention row and values are given; the uniform allocation keeps each head's top k_h, the
// adaptive one the top sum_h k_h scores over all heads of the layer. Each allocation's L1 output
// loss is measured against Ada-KV's bound 2C sum_h (1 - kept mass_h).
#pragma once
#include <Eigen/Dense>
#include <functional>
#include <vector>

#include "kvo/core/trace.hpp"
#include "kvo/proofs_check/check_options.hpp"
#include "kvo/proofs_check/report.hpp"

namespace kvo::detail {

// One query i of the layer: per query head its attention over keys 0..i and its values, (i+1) x d.
struct LayerQuery {
  int i = 0;
  std::vector<std::vector<double>> rows;
  std::vector<Eigen::MatrixXd> values;
};

// The kept positions per head for per-head budgets.
using HeadAllocation = std::function<std::vector<std::vector<int>>(const std::vector<std::vector<double>>& rows,
                                                                   const std::vector<int>& budgets)>;
std::vector<std::vector<int>> uniform_allocation(const std::vector<std::vector<double>>& rows,
                                                 const std::vector<int>& budgets);
// Ada-KV's: the sum of the budgets over the largest scores of all heads; ties: the lower head,
// then the earlier position.
std::vector<std::vector<int>> adaptive_allocation(const std::vector<std::vector<double>>& rows,
                                                  const std::vector<int>& budgets);

class AdaKvAccumulator {
 public:
  AdaKvAccumulator(int layer, std::vector<int> budgets, HeadAllocation adaptive = adaptive_allocation);
  void add(const LayerQuery& q);
  std::vector<CheckRecord> records(const TraceChecksOptions& o) const;

 private:
  struct Query {
    int i;
    double loss_uniform, bound_uniform, loss_adaptive, bound_adaptive;
    int fewest, most;  // the adaptive allocation's smallest and largest head budget
  };
  int layer_;
  std::vector<int> budgets_;
  HeadAllocation adaptive_;
  std::vector<Query> queries_;
};

// The layer's records from the trace: 32 queries evenly spaced over the steps whose caches are full.
std::vector<CheckRecord> adakv_records(const Trace& trace, int layer, const TraceChecksOptions& o);

}  // namespace kvo::detail
