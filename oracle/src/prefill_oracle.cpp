#include "kvo/oracle/prefill_oracle.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "prefill_values.hpp"

namespace kvo {
namespace {

// The k largest weights (ties: the earlier position), ascending, with the LP dual of
// max w.x s.t. sum x <= k, 0 <= x <= 1: min k*lambda + sum_j max(0, w_j - lambda), lambda >= 0.
PrefillOptimum top_k_certified(const std::vector<double>& w, int k) {
  require(k >= 0, "prefill: negative budget");
  std::vector<int> order(w.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return w[a] > w[b]; });
  const size_t kk = std::min(static_cast<size_t>(k), order.size());
  PrefillOptimum o;
  o.set.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kk));
  std::sort(o.set.begin(), o.set.end());
  for (int j : o.set) o.value += w[static_cast<size_t>(j)];
  o.lambda = kk > 0 && kk < order.size() ? w[order[kk - 1]] : (kk == 0 && !order.empty() ? w[order[0]] : 0.0);
  o.upper = static_cast<double>(kk) * o.lambda;
  for (double x : w) o.upper += std::max(0.0, x - o.lambda);
  return o;
}

}  // namespace

PrefillUnit prefill_unit(const Trace& tr, int layer, int kv_head, int prompt_len, bool output_bound) {
  require(prompt_len >= 1 && prompt_len < tr.n_tokens,
          "prefill: the prompt length must be in [1, " + std::to_string(tr.n_tokens - 1) +
              "] so that queries follow it, got " + std::to_string(prompt_len));
  require(kv_head >= 0 && kv_head < tr.n_kv_heads,
          "prefill: KV head " + std::to_string(kv_head) + " is not in the trace");
  PrefillUnit u;
  u.layer = layer;
  u.kv_head = kv_head;
  u.prompt_len = prompt_len;
  u.queries = tr.n_tokens - prompt_len;
  u.weight.assign(static_cast<size_t>(prompt_len), 0.0);
  const int g = tr.group_size();
  const bool bound = output_bound && tr.has_values(layer);
  Eigen::MatrixXd values;
  std::optional<PromptEccentricities> ecc;  // R_j(t): the output bound's per-key distances
  if (bound) {
    values = kv_values(tr, layer, kv_head);
    ecc.emplace(values, prompt_len);
    u.bound_weight.assign(static_cast<size_t>(prompt_len), 0.0);
  }
  std::vector<int> keys;
  std::vector<double> logits, row;
  for (int h = kv_head * g; h < (kv_head + 1) * g; ++h) {
    const HeadView head(tr, layer, h);
    if (bound) ecc->start();
    for (int t = prompt_len; t < tr.n_tokens; ++t) {
      prefix_attention(head, t, keys, logits, row);
      for (int j = 0; j < prompt_len; ++j) u.weight[static_cast<size_t>(j)] += row[static_cast<size_t>(j)] / g;
      for (int j = prompt_len; j <= t; ++j) u.decoded_mass += row[static_cast<size_t>(j)] / g;
      if (!bound) continue;
      ecc->advance(t);
      for (int j = 0; j < prompt_len; ++j)
        u.bound_weight[static_cast<size_t>(j)] += (*ecc)[j] * row[static_cast<size_t>(j)] / g;
    }
  }
  u.prompt_mass = std::accumulate(u.weight.begin(), u.weight.end(), 0.0);
  u.bound_total = std::accumulate(u.bound_weight.begin(), u.bound_weight.end(), 0.0);
  return u;
}

PrefillOptimum solve_prefill(const PrefillUnit& u, int k) {
  PrefillOptimum o = top_k_certified(u.weight, k);
  o.value = prefill_value(u, o.set);
  return o;
}

PrefillOptimum solve_output_bound(const PrefillUnit& u, int k) {
  require(u.bound_weight.size() == static_cast<size_t>(u.prompt_len),
          "prefill: the output bound needs the layer's values, which the trace does not hold");
  return top_k_certified(u.bound_weight, k);
}

double output_bound(const PrefillUnit& u, std::span<const int> set) {
  require(u.bound_weight.size() == static_cast<size_t>(u.prompt_len),
          "prefill: the output bound needs the layer's values, which the trace does not hold");
  double kept = 0.0;
  for (int j : set) {
    require(j >= 0 && j < u.prompt_len, "prefill: position " + std::to_string(j) + " is outside the prompt");
    kept += u.bound_weight[static_cast<size_t>(j)];
  }
  return u.bound_total - kept;
}

double prefill_value(const PrefillUnit& u, std::span<const int> set) {
  double v = 0.0;
  for (int j : set) {
    require(j >= 0 && j < u.prompt_len, "prefill: position " + std::to_string(j) + " is outside the prompt");
    v += u.weight[static_cast<size_t>(j)];
  }
  return v;
}

std::vector<PressVsOptimum> compare_presses(const Trace& tr, int layer, const PrefillComparisonOptions& o) {
  std::vector<PrefillUnit> units;
  const bool fidelity = o.output_fidelity && tr.has_values(layer);
  for (int kv = 0; kv < tr.n_kv_heads; ++kv) units.push_back(prefill_unit(tr, layer, kv, o.prompt_len, fidelity));
  const PressLayer at = press_layer_of(tr, layer, o.prompt_len);
  std::vector<PressVsOptimum> out;
  std::vector<std::vector<std::vector<int>>> kept_sets(units.size());  // [kv head][record]
  for (const PressOptions& po : o.presses) {
    const PressResult pr = run_press(at, po);
    for (int kv_head = 0; kv_head < tr.n_kv_heads; ++kv_head) {
      const PrefillUnit& u = units[static_cast<size_t>(kv_head)];
      const auto& kept = pr.kept[static_cast<size_t>(kv_head)];
      const PrefillOptimum opt = solve_prefill(u, pr.n_kept);
      PressVsOptimum r;
      r.press = po.id;
      r.compression_ratio = po.compression_ratio;
      r.layer = layer;
      r.kv_head = kv_head;
      r.k = pr.n_kept;
      r.value = prefill_value(u, kept);
      r.optimum = opt.value;
      r.fraction = opt.value > 0 ? r.value / opt.value : 1.0;
      r.prompt_share = u.prompt_mass > 0 ? r.value / u.prompt_mass : 1.0;
      r.optimum_share = u.prompt_mass > 0 ? r.optimum / u.prompt_mass : 1.0;
      std::vector<int> both;
      std::set_intersection(kept.begin(), kept.end(), opt.set.begin(), opt.set.end(), std::back_inserter(both));
      r.overlap = static_cast<int>(both.size());
      if (fidelity) r.output_bound = output_bound(u, kept);
      kept_sets[static_cast<size_t>(kv_head)].push_back(kept);
      out.push_back(r);
    }
  }
  if (!fidelity) return out;
  // Per KV head, one pass over the following queries gives E of every press's set and of both
  // reference sets (the mass optimum, B's minimiser) at every k the presses used.
  for (int kv_head = 0; kv_head < tr.n_kv_heads; ++kv_head) {
    const PrefillUnit& u = units[static_cast<size_t>(kv_head)];
    std::vector<std::vector<int>> sets = std::move(kept_sets[static_cast<size_t>(kv_head)]);
    const size_t n_press = sets.size();
    std::vector<int> ks;
    for (const auto& s : sets) ks.push_back(static_cast<int>(s.size()));
    std::sort(ks.begin(), ks.end());
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
    std::vector<double> min_bound;
    for (int k : ks) {
      sets.push_back(solve_prefill(u, k).set);
      const PrefillOptimum b = solve_output_bound(u, k);
      sets.push_back(b.set);
      min_bound.push_back(output_bound(u, b.set));
    }
    const std::vector<double> e = output_errors(tr, layer, kv_head, o.prompt_len, sets);
    for (size_t x = 0; x < n_press; ++x) {
      PressVsOptimum& r = out[x * static_cast<size_t>(tr.n_kv_heads) + static_cast<size_t>(kv_head)];
      const size_t at_k = static_cast<size_t>(std::lower_bound(ks.begin(), ks.end(), r.k) - ks.begin());
      r.output_error = e[x];
      r.mass_optimum_error = e[n_press + 2 * at_k];
      r.bound_optimum_error = e[n_press + 2 * at_k + 1];
      r.bound_optimum_bound = min_bound[at_k];
    }
  }
  return out;
}

}  // namespace kvo
