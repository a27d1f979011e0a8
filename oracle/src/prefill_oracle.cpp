#include "kvo/oracle/prefill_oracle.hpp"

#include <algorithm>
#include <numeric>

#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"

namespace kvo {

PrefillUnit prefill_unit(const Trace& tr, int layer, int kv_head, int prompt_len) {
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
  std::vector<int> keys;
  std::vector<double> logits, row;
  for (int h = kv_head * g; h < (kv_head + 1) * g; ++h) {
    const HeadView head(tr, layer, h);
    for (int t = prompt_len; t < tr.n_tokens; ++t) {
      prefix_attention(head, t, keys, logits, row);
      for (int j = 0; j < prompt_len; ++j) u.weight[static_cast<size_t>(j)] += row[static_cast<size_t>(j)] / g;
      for (int j = prompt_len; j <= t; ++j) u.decoded_mass += row[static_cast<size_t>(j)] / g;
    }
  }
  u.prompt_mass = std::accumulate(u.weight.begin(), u.weight.end(), 0.0);
  return u;
}

PrefillOptimum solve_prefill(const PrefillUnit& u, int k) {
  require(k >= 0, "prefill: negative budget");
  const auto& w = u.weight;
  std::vector<int> order(w.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return w[a] > w[b]; });
  const size_t kk = std::min(static_cast<size_t>(k), order.size());
  PrefillOptimum o;
  o.set.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kk));
  std::sort(o.set.begin(), o.set.end());
  o.value = prefill_value(u, o.set);
  // Dual of max w.x s.t. sum x <= k, 0 <= x <= 1: min k*lambda + sum_j max(0, w_j - lambda), lambda >= 0.
  o.lambda = kk > 0 && kk < order.size() ? w[order[kk - 1]] : (kk == 0 && !order.empty() ? w[order[0]] : 0.0);
  o.upper = static_cast<double>(kk) * o.lambda;
  for (double x : w) o.upper += std::max(0.0, x - o.lambda);
  return o;
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
  for (int kv = 0; kv < tr.n_kv_heads; ++kv) units.push_back(prefill_unit(tr, layer, kv, o.prompt_len));
  const PressLayer at = press_layer_of(tr, layer, o.prompt_len);
  std::vector<PressVsOptimum> out;
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
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace kvo
