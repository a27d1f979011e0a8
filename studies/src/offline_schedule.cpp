#include "kvo/studies/offline_schedule.hpp"

#include <vector>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/policies.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/oracle/offline_streaming.hpp"
#include "kvo/oracle/weight_rows.hpp"

namespace kvo::studies {
namespace {

// The end times of a nested policy run on a dense matrix (token j held after steps j..end[j]).
std::vector<int> ends_of(EvictionPolicy& policy, const Eigen::MatrixXd& w, const ResolvedBudget& budget) {
  const int n = static_cast<int>(w.rows());
  PolicySetup setup;
  setup.n = n;
  setup.budget = budget;
  setup.dense = &w;
  policy.begin(setup);
  std::vector<int> end(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) end[static_cast<size_t>(j)] = j - 1;
  std::vector<double> probs;
  for (int i = 0; i < n; ++i) {
    const std::vector<int> attended = policy.attended(i);
    probs.assign(attended.size(), 0.0);
    for (size_t t = 0; t < attended.size(); ++t) probs[t] = w(i, attended[t]);
    policy.observe(i, attended, probs);
    for (int j : policy.cache()) end[static_cast<size_t>(j)] = i;
  }
  return end;
}

}  // namespace

std::shared_ptr<const ScheduleSource> offline_schedules(PolicyId id, const Trace& tr, const Budget& budget) {
  require(policy_traits(id).offline, "internal: policy " + policy_name(id) + " follows no offline schedule");
  auto ends = std::make_shared<std::vector<std::vector<int>>>();
  const int g = tr.group_size(), n = tr.n_tokens;
  for (int l = 0; l < tr.n_layers; ++l)
    for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
      std::vector<HeadView> heads;
      for (int h = kv * g; h < (kv + 1) * g; ++h) heads.emplace_back(tr, l, h);
      const GroupMeanWeightRows rows(std::move(heads));  // the group's mean attention, a row at a time
      const ResolvedBudget b = budget.resolve(n, l, kv);
      if (id == PolicyId::Lookahead) {  // its rule reads every query's attention at once: the dense matrix
        Eigen::MatrixXd w = Eigen::MatrixXd::Zero(n, n);
        std::vector<double> row;
        for (int i = 0; i < n; ++i) {
          row.resize(static_cast<size_t>(i) + 1);
          rows.row(i, row);
          for (int j = 0; j <= i; ++j) w(i, j) = row[static_cast<size_t>(j)];
        }
        PolicySpec spec;
        spec.id = id;
        ends->push_back(ends_of(*make_policy(spec), w, b));
      } else {  // the offline optimum from rows recomputed on demand: no n x n matrix
        StreamingOfflineOptions so;
        so.threads = 0;
        so.evaluate = false;  // only the schedule is followed
        ends->push_back(solve_offline_streaming(rows, b.total, 0, so).end);
      }
    }
  const int n_kv = tr.n_kv_heads;
  return std::make_shared<const ScheduleSource>(
      [ends, n_kv](int layer, int kv) { return (*ends)[static_cast<size_t>(layer * n_kv + kv)]; });
}

}  // namespace kvo::studies
