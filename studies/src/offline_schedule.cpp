#include "kvo/studies/offline_schedule.hpp"

#include <vector>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/policies.hpp"
#include "kvo/oracle/offline_oracle.hpp"

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
  const int g = tr.group_size();
  for (int l = 0; l < tr.n_layers; ++l)
    for (int kv = 0; kv < tr.n_kv_heads; ++kv) {
      Eigen::MatrixXd w = Eigen::MatrixXd::Zero(tr.n_tokens, tr.n_tokens);
      for (int h = kv * g; h < (kv + 1) * g; ++h) w += dense_attention(HeadView(tr, l, h));
      w /= g;
      const ResolvedBudget b = budget.resolve(tr.n_tokens, l, kv);
      if (id == PolicyId::Lookahead) {
        PolicySpec spec;
        spec.id = id;
        ends->push_back(ends_of(*make_policy(spec), w, b));
      } else {
        OfflineProblem p;
        p.w = std::move(w);
        p.budget = b.total;
        ends->push_back(solve_offline(p).end);
      }
    }
  const int n_kv = tr.n_kv_heads;
  return std::make_shared<const ScheduleSource>(
      [ends, n_kv](int layer, int kv) { return (*ends)[static_cast<size_t>(layer * n_kv + kv)]; });
}

}  // namespace kvo::studies
