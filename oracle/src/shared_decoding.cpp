#include "kvo/oracle/shared_decoding.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "kvo/core/attention.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/oracle/offline_pages.hpp"
#include "kvo/oracle/offline_periodic.hpp"
#include "kvo/oracle/offline_shared.hpp"
#include "kvo/oracle/weight_rows.hpp"

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
  SharedDecodingResult res;
  res.n = tr.n_tokens;
  res.kv_heads = tr.n_kv_heads;
  res.layers = request.chosen_layers(tr);
  const size_t kv = static_cast<size_t>(tr.n_kv_heads);
  const bool streaming = request.solver == DecodingSolver::ColumnGeneration;
  // Dense: every unit's n x n weights. Column generation: its rows, recomputed on demand.
  std::vector<OfflineProblem> units(streaming ? 0 : res.layers.size() * kv);
  std::vector<GroupMeanWeightRows> unit_rows;
  const int g = tr.group_size();
  for (size_t u = 0; streaming && u < res.layers.size() * kv; ++u) {
    std::vector<HeadView> group;
    for (int h = static_cast<int>(u % kv) * g; h < static_cast<int>(u % kv + 1) * g; ++h)
      group.emplace_back(tr, res.layers[u / kv], h);
    unit_rows.emplace_back(std::move(group));
  }
  std::vector<double> mass(res.layers.size() * kv);
  parallel_for(static_cast<int>(mass.size()), request.threads, [&](int x) {
    const size_t u = static_cast<size_t>(x);
    if (streaming) {
      for_each_row(unit_rows[u], 0, tr.n_tokens, false, 1, [&](int, std::span<const double> row) {
        for (double a : row) mass[u] += a;
      });
    } else {
      units[u] = decoding_unit(tr, res.layers[u / kv], static_cast<int>(u % kv), 1, 0);
      mass[u] = units[u].w.sum();  // zeros above the diagonal
    }
    if (request.on_unit) request.on_unit();
  });
  const double total_mass = std::accumulate(mass.begin(), mass.end(), 0.0);
  // Column generation in pages of b: each unit's rows folded on demand.
  std::map<int, std::vector<PagedWeightRows>> paged_rows;
  auto sources = [&](int b, const std::vector<size_t>& set) {
    std::vector<const WeightRows*> out;
    if (b > 1 && !paged_rows.contains(b))
      for (const GroupMeanWeightRows& u : unit_rows) paged_rows[b].emplace_back(u, b);
    for (size_t u : set) out.push_back(b == 1 ? static_cast<const WeightRows*>(&unit_rows[u]) : &paged_rows[b][u]);
    return out;
  };
  // Every unit's problem folded into pages of b (the token problems themselves for b = 1), built
  // once per page size.
  std::map<int, std::vector<OfflineProblem>> paged;
  auto problems = [&](int b) -> std::vector<OfflineProblem>& {
    if (b == 1) return units;
    auto [it, fresh] = paged.try_emplace(b);
    if (fresh) {
      it->second.resize(units.size());
      parallel_for(static_cast<int>(units.size()), request.threads, [&](int u) {
        it->second[static_cast<size_t>(u)] = fold_into_pages(units[static_cast<size_t>(u)], {b, 1, 1});
      });
    }
    return it->second;
  };
  // Every sharing set of a scope solved on threads (a set is consecutive units, layer-major) at
  // per-unit budget or target k, every step (interval 0) or periodically, in pages of b; summed
  // into a row.
  auto solve = [&](BudgetScope scope, int k, int r, int interval, int b) {
    const PageShape shape = b == 1 ? PageShape{1, k, r} : page_shape(k, r, b);
    const std::vector<std::vector<size_t>> sets = sharing_units(scope, res.layers.size(), kv);
    std::vector<SharedOfflineSolution> solved(sets.size());
    if (streaming) {
      std::vector<std::vector<const WeightRows*>> set_sources;
      for (const std::vector<size_t>& set : sets) set_sources.push_back(sources(b, set));
      StreamingOfflineOptions options;  // one set (the model scope): its rows on every thread
      options.threads = sets.size() == 1 ? request.threads : 1;
      parallel_for(static_cast<int>(sets.size()), request.threads, [&](int x) {
        solved[static_cast<size_t>(x)] =
            solve_offline_shared_streaming(set_sources[static_cast<size_t>(x)], shape.pages, shape.recent, options);
      });
    } else {
      std::vector<OfflineProblem>& own = problems(b);
      for (OfflineProblem& p : own) {
        p.budget = shape.pages;
        p.recent = shape.recent;
      }
      parallel_for(static_cast<int>(sets.size()), request.threads, [&](int x) {
        const std::vector<size_t>& set = sets[static_cast<size_t>(x)];
        const auto group = std::span<const OfflineProblem>(own).subspan(set.front(), set.size());
        solved[static_cast<size_t>(x)] =
            interval == 0 ? solve_offline_shared(group) : solve_offline_periodic(group, {request.prompt_len, interval});
      });
    }
    SharedDecodingRow row;
    row.scope = scope;
    row.k = k;
    row.recent = r;
    row.interval = interval;
    row.page_size = b;
    row.total_mass = total_mass;
    row.min_held = tr.n_tokens;
    for (const SharedOfflineSolution& s : solved) {
      row.value += s.value;
      row.upper += s.upper;
      row.work += s.work;
      for (const std::vector<int>& end : s.end) {  // held after the last step
        const int held = tokens_held_at_end(end, tr.n_tokens, b);
        row.min_held = std::min(row.min_held, held);
        row.max_held = std::max(row.max_held, held);
      }
    }
    return row;
  };
  auto add_rows = [&](int k, int r, int interval) {
    // Each (scope, page size) solved once for this budget: the per-head row is every row's
    // reference, the token row every page row's.
    std::map<std::pair<BudgetScope, int>, SharedDecodingRow> solved;
    auto row_of = [&](BudgetScope scope, int b) -> const SharedDecodingRow& {
      auto it = solved.find({scope, b});
      if (it == solved.end()) it = solved.emplace(std::pair{scope, b}, solve(scope, k, r, interval, b)).first;
      return it->second;
    };
    for (int b : interval == 0 ? request.page_sizes : std::vector<int>{1})
      for (BudgetScope scope : request.chosen_scopes()) {
        SharedDecodingRow row = row_of(scope, b);
        row.per_head_value = row_of(BudgetScope::Head, b).value;
        row.gain = row.per_head_value > 0 ? row.value / row.per_head_value : 1.0;
        row.token_value = row_of(scope, 1).value;
        if (interval > 0) {
          // Compression after every decoding step (interval 1) to target T' lets each query see T' + 1
          // tokens: T' = k + N - 1 matches the periodic cache's peak, k + (N - 1) / 2 its mean.
          row.peak_k = std::min(tr.n_tokens, k + interval);
          row.mean_k = std::min(tr.n_tokens, k + (interval + 1) / 2);
          // At interval 1 the references are the row's own problem: reused, not solved again.
          auto reference = [&](int target) {
            return interval == 1 && target == k ? row : solve(scope, target, r, 1, 1);
          };
          const SharedDecodingRow peak = reference(row.peak_k - 1);
          const SharedDecodingRow mean = row.mean_k == row.peak_k ? peak : reference(row.mean_k - 1);
          row.peak_value = peak.value;
          row.peak_upper = peak.upper;
          row.mean_value = mean.value;
          row.mean_upper = mean.upper;
        }
        res.rows.push_back(row);
      }
  };
  if (request.periodic()) {
    for (const auto& [k, r] : request.periodic_targets(tr))
      for (int interval : request.intervals) add_rows(k, r, interval);
  } else {
    for (const auto& [k, r] : request.decoding_budgets(tr)) add_rows(k, r, 0);
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
                         {"work", r.work},
                         {"page_size", r.page_size},
                         {"token_value", r.token_value}});
  for (size_t x = 0; x < rows.size(); ++x)
    if (rows[x].interval > 0) {
      nlohmann::json& j = rows_json[x];
      j["interval"] = rows[x].interval;
      j["peak_k"] = rows[x].peak_k;
      j["peak_value"] = rows[x].peak_value;
      j["peak_upper"] = rows[x].peak_upper;
      j["mean_k"] = rows[x].mean_k;
      j["mean_value"] = rows[x].mean_value;
      j["mean_upper"] = rows[x].mean_upper;
    }
  return {{"trace", trace},       {"protocol", "decoding"}, {"n", n},
          {"kv_heads", kv_heads}, {"layers", layers},       {"rows", rows_json}};
}

}  // namespace kvo
