// ADA1-ADA3, Ada-KV's bound and allocation (arXiv 2407.11550) on the query heads of one layer.
// With no output projection in a trace, the layer's output is the heads' outputs side by side
// (W_O the identity), so C is the largest L1 norm of a value row of the layer.
#include <algorithm>
#include <numeric>

#include "adakv_layer.hpp"
#include "head_data.hpp"
#include "kvo/core/attention.hpp"
#include "top_k.hpp"

namespace kvo::detail {

std::vector<std::vector<int>> uniform_allocation(const std::vector<std::vector<double>>& rows,
                                                 const std::vector<int>& budgets) {
  std::vector<std::vector<int>> kept;
  for (size_t h = 0; h < rows.size(); ++h) kept.push_back(top_k_positions(rows[h], budgets[h]));
  return kept;
}

std::vector<std::vector<int>> adaptive_allocation(const std::vector<std::vector<double>>& rows,
                                                  const std::vector<int>& budgets) {
  std::vector<std::pair<int, int>> all;  // (head, position)
  for (size_t h = 0; h < rows.size(); ++h)
    for (size_t j = 0; j < rows[h].size(); ++j) all.emplace_back(static_cast<int>(h), static_cast<int>(j));
  const auto total = static_cast<long>(
      std::min<size_t>(all.size(), static_cast<size_t>(std::accumulate(budgets.begin(), budgets.end(), 0))));
  auto heavier = [&](const std::pair<int, int>& a, const std::pair<int, int>& b) {
    const double x = rows[static_cast<size_t>(a.first)][static_cast<size_t>(a.second)],
                 y = rows[static_cast<size_t>(b.first)][static_cast<size_t>(b.second)];
    return x != y ? x > y : a < b;
  };
  std::nth_element(all.begin(), all.begin() + total, all.end(), heavier);
  std::vector<std::vector<int>> kept(rows.size());
  for (long x = 0; x < total; ++x)
    kept[static_cast<size_t>(all[static_cast<size_t>(x)].first)].push_back(all[static_cast<size_t>(x)].second);
  for (auto& k : kept) std::sort(k.begin(), k.end());
  return kept;
}

namespace {

struct Loss {
  double loss = 0.0, bound = 0.0;
};

// sum_h |o_h - o^_h|_1 and 2C sum_h (1 - m_h), o^_h renormalised over the kept set (0 when empty).
Loss layer_loss(const LayerQuery& q, const std::vector<std::vector<int>>& kept, double C) {
  Loss out;
  for (size_t h = 0; h < q.rows.size(); ++h) {
    const auto& a = q.rows[h];
    const Eigen::MatrixXd& v = q.values[h];
    Eigen::VectorXd full = Eigen::VectorXd::Zero(v.cols()), part = full;
    for (size_t j = 0; j < a.size(); ++j) full += a[j] * v.row(static_cast<long>(j)).transpose();
    double m = 0.0;
    for (int j : kept[h]) {
      part += a[static_cast<size_t>(j)] * v.row(j).transpose();
      m += a[static_cast<size_t>(j)];
    }
    if (m > 0) part /= m;
    out.loss += (full - part).lpNorm<1>();
    out.bound += 2.0 * C * (1.0 - m);
  }
  return out;
}

}  // namespace

AdaKvAccumulator::AdaKvAccumulator(int layer, std::vector<int> budgets, HeadAllocation adaptive)
    : layer_(layer), budgets_(std::move(budgets)), adaptive_(std::move(adaptive)) {}

void AdaKvAccumulator::add(const LayerQuery& q) {
  double C = 0.0;
  for (const auto& v : q.values)
    for (long j = 0; j < v.rows(); ++j) C = std::max(C, v.row(j).lpNorm<1>());
  const auto adaptive = adaptive_(q.rows, budgets_);
  const Loss u = layer_loss(q, uniform_allocation(q.rows, budgets_), C), a = layer_loss(q, adaptive, C);
  int fewest = q.i + 1, most = 0;
  for (const auto& k : adaptive) {
    fewest = std::min(fewest, static_cast<int>(k.size()));
    most = std::max(most, static_cast<int>(k.size()));
  }
  queries_.push_back({q.i, u.loss, u.bound, a.loss, a.bound, fewest, most});
}

std::vector<CheckRecord> AdaKvAccumulator::records(const TraceChecksOptions& o) const {
  std::vector<CheckRecord> out;
  if (queries_.empty()) return out;
  auto record = [&](const std::string& id, const std::string& variant, ClaimKind kind, bool holds, double metric,
                    long step) {
    CheckRecord r = make_record(id, variant, kind, holds, metric);
    r.layer = layer_;
    r.step = step;
    return r;
  };
  const double heads = static_cast<double>(budgets_.size());
  if (check_enabled(o, "ADA1"))
    for (const bool adaptive : {false, true}) {
      double worst = 0.0;
      long at = -1, fails = 0, first = -1;
      for (const Query& q : queries_) {
        const double loss = adaptive ? q.loss_adaptive : q.loss_uniform,
                     bound = adaptive ? q.bound_adaptive : q.bound_uniform;
        if (loss > bound + 1e-9 * (1.0 + std::abs(bound)) && fails++ == 0) first = q.i;
        if (bound > 1e-12 && loss / bound > worst) worst = loss / bound, at = q.i;
      }
      auto r =
          record("ADA1", adaptive ? "adaptive" : "uniform", ClaimKind::Theorem, fails == 0, worst, fails ? first : at);
      r.detail = {{"queries", queries_.size()}, {"failures", fails}};
      out.push_back(std::move(r));
    }
  if (check_enabled(o, "ADA2")) {
    double worst = -INFINITY;
    long at = -1;
    bool holds = true;
    for (const Query& q : queries_) {
      const double gap = q.bound_adaptive - q.bound_uniform;
      holds = holds && gap <= 1e-12 * (1.0 + q.bound_uniform);
      if (gap > worst) worst = gap, at = q.i;
    }
    auto r = record("ADA2", "adaptive vs uniform", ClaimKind::Theorem, holds, worst, at);
    r.detail = {{"queries", queries_.size()}};
    out.push_back(std::move(r));
  }
  if (check_enabled(o, "ADA3")) {
    double lu = 0.0, la = 0.0;
    long lower = 0, worst_at = -1;
    double worst = -INFINITY;
    std::vector<double> tight_u, tight_a;
    double fewest = 0.0, most = 0.0;
    for (const Query& q : queries_) {
      lu += q.loss_uniform;
      la += q.loss_adaptive;
      lower += q.loss_adaptive < q.loss_uniform ? 1 : 0;
      if (q.loss_uniform > 0 && q.loss_adaptive / q.loss_uniform > worst)
        worst = q.loss_adaptive / q.loss_uniform, worst_at = q.i;
      if (q.bound_uniform > 0) tight_u.push_back(q.loss_uniform / q.bound_uniform);
      if (q.bound_adaptive > 0) tight_a.push_back(q.loss_adaptive / q.bound_adaptive);
      fewest += q.fewest;
      most += q.most;
    }
    auto median = [](std::vector<double> v) {
      if (v.empty()) return static_cast<double>(NAN);
      std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    const double ratio = lu > 0 ? la / lu : 1.0, n = static_cast<double>(queries_.size());
    auto r = record("ADA3", "adaptive vs uniform", ClaimKind::Finding, ratio < 1.0, ratio, worst_at);
    r.detail = {{"queries", queries_.size()},
                {"heads", heads},
                {"queries_lower", lower},
                {"uniform_loss", lu / n},
                {"adaptive_loss", la / n},
                {"tightness_uniform", median(tight_u)},
                {"tightness_adaptive", median(tight_a)},
                {"adaptive_fewest_kept", fewest / n},
                {"adaptive_most_kept", most / n},
                {"holds_when", "adaptive loss < uniform loss, summed over the queries"}};
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<CheckRecord> adakv_records(const Trace& trace, int layer, const TraceChecksOptions& o) {
  constexpr int kQueries = 32;
  const std::vector<int> heads = o.run.chosen_heads(trace.n_heads);
  std::vector<int> budgets;
  std::vector<HeadView> views;
  for (int h : heads) {
    budgets.push_back(o.run.unit_budget(trace.n_tokens, layer, h).total);
    views.emplace_back(trace, layer, h);
    if (!views.back().has_values()) return {};
  }
  const int k = *std::max_element(budgets.begin(), budgets.end());
  std::vector<int> steps;
  for (int i = k; i < trace.n_tokens; ++i) steps.push_back(i);
  AdaKvAccumulator acc(layer, budgets);
  std::vector<int> keys;
  std::vector<double> logits;
  for (int i : evenly_spaced(steps, kQueries)) {
    LayerQuery q;
    q.i = i;
    for (const HeadView& view : views) {
      std::vector<double> probs;
      prefix_attention(view, i, keys, logits, probs);
      q.rows.push_back(std::move(probs));
      Eigen::MatrixXd v(i + 1, view.head_dim());
      for (int j = 0; j <= i; ++j) v.row(j) = view.value(j).transpose();
      q.values.push_back(std::move(v));
    }
    acc.add(q);
  }
  return acc.records(o);
}

}  // namespace kvo::detail
