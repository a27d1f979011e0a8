#include "kvo/oracle/shared_decoding.hpp"

#include <algorithm>
#include <numeric>

#include "kvo/core/attention.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/oracle/offline_shared.hpp"

namespace kvo {

OfflineProblem decoding_unit(const Trace& tr, int layer, int kv_head, int budget, int recent) {
  OfflineProblem p;
  const int g = tr.group_size();
  p.w = Eigen::MatrixXd::Zero(tr.n_tokens, tr.n_tokens);
  for (int h = kv_head * g; h < (kv_head + 1) * g; ++h) p.w += dense_attention(HeadView(tr, layer, h));
  p.w /= g;
  p.budget = budget;
  p.recent = recent;
  return p;
}

SharedDecodingResult run_shared_decoding(const Trace& tr, const AllocationRequest& request) {
  request.validate(tr);
  const std::vector<std::pair<int, int>> budgets = request.decoding_budgets(tr);
  SharedDecodingResult res;
  res.n = tr.n_tokens;
  res.kv_heads = tr.n_kv_heads;
  res.layers = request.chosen_layers(tr);
  const size_t kv = static_cast<size_t>(tr.n_kv_heads);
  std::vector<OfflineProblem> units(res.layers.size() * kv);
  std::vector<double> mass(units.size());
  parallel_for(static_cast<int>(units.size()), request.threads, [&](int x) {
    const size_t u = static_cast<size_t>(x);
    units[u] = decoding_unit(tr, res.layers[u / kv], static_cast<int>(u % kv), 1, 0);
    mass[u] = units[u].w.sum();  // zeros above the diagonal
    if (request.on_unit) request.on_unit();
  });
  const double total_mass = std::accumulate(mass.begin(), mass.end(), 0.0);
  for (const auto& [k, r] : budgets) {
    for (OfflineProblem& p : units) {
      p.budget = k;
      p.recent = r;
    }
    // Every sharing set of a scope solved on threads; a set is consecutive units, layer-major.
    auto solve = [&](BudgetScope scope) {
      const std::vector<std::vector<size_t>> sets = sharing_units(scope, res.layers.size(), kv);
      std::vector<SharedOfflineSolution> solved(sets.size());
      parallel_for(static_cast<int>(sets.size()), request.threads, [&](int x) {
        const std::vector<size_t>& set = sets[static_cast<size_t>(x)];
        solved[static_cast<size_t>(x)] = solve_offline_shared(std::span(units).subspan(set.front(), set.size()));
      });
      return solved;
    };
    const std::vector<SharedOfflineSolution> per_unit = solve(BudgetScope::Head);  // the reference of every row
    double per_head = 0.0;
    for (const SharedOfflineSolution& s : per_unit) per_head += s.value;
    for (BudgetScope scope : request.chosen_scopes()) {
      const std::vector<SharedOfflineSolution> solved = scope == BudgetScope::Head ? per_unit : solve(scope);
      SharedDecodingRow row;
      row.scope = scope;
      row.k = k;
      row.recent = r;
      row.per_head_value = per_head;
      row.total_mass = total_mass;
      row.min_held = tr.n_tokens;
      for (const SharedOfflineSolution& s : solved) {
        row.value += s.value;
        row.upper += s.upper;
        row.work += s.work;
        for (const std::vector<int>& end : s.end) {  // held after the last step: ends at n - 1
          const int held = static_cast<int>(std::count(end.begin(), end.end(), tr.n_tokens - 1));
          row.min_held = std::min(row.min_held, held);
          row.max_held = std::max(row.max_held, held);
        }
      }
      row.gain = per_head > 0 ? row.value / per_head : 1.0;
      res.rows.push_back(row);
    }
  }
  return res;
}

nlohmann::json SharedDecodingResult::to_json(const std::string& trace) const {
  nlohmann::json rows_json = nlohmann::json::array();
  for (const SharedDecodingRow& r : rows)
    rows_json.push_back({{"scope", budget_scope_name(r.scope)},
                         {"k", r.k},
                         {"recent", r.recent},
                         {"value", r.value},
                         {"upper", r.upper},
                         {"per_head_value", r.per_head_value},
                         {"total_mass", r.total_mass},
                         {"gain", r.gain},
                         {"min_held", r.min_held},
                         {"max_held", r.max_held},
                         {"work", r.work}});
  return {{"trace", trace},       {"protocol", "decoding"}, {"n", n},
          {"kv_heads", kv_heads}, {"layers", layers},       {"rows", rows_json}};
}

}  // namespace kvo
