#include "oracle_schedule.hpp"

#include <vector>

#include "kvo/core/attention.hpp"
#include "kvo/oracle/offline_oracle.hpp"

namespace kvo::model {

std::shared_ptr<const ScheduleSource> oracle_schedules(const Trace& tr, const Budget& budget) {
  auto ends = std::make_shared<std::vector<std::vector<int>>>();
  const int g = tr.group_size();
  for (int l = 0; l < tr.n_layers; ++l)
    for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
      OfflineProblem p;
      p.w = Eigen::MatrixXd::Zero(tr.n_tokens, tr.n_tokens);
      for (int h = kv * g; h < (kv + 1) * g; ++h) p.w += dense_attention(HeadView(tr, l, h));
      p.w /= g;
      p.budget = budget.resolve(tr.n_tokens, l, kv).total;
      ends->push_back(solve_offline(p).end);
    }
  const int n_kv = tr.n_kv_heads;
  return std::make_shared<const ScheduleSource>(
      [ends, n_kv](int layer, int kv) { return (*ends)[static_cast<size_t>(layer * n_kv + kv)]; });
}

}  // namespace kvo::model
