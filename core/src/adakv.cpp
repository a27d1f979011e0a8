#include "kvo/core/adakv.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"

namespace kvo {

int adakv_safeguard(int n_kept, double alpha_safeguard) {
  require(alpha_safeguard >= 0 && alpha_safeguard <= 1, "alpha_safeguard " + std::to_string(alpha_safeguard) +
                                                            " is outside [0, 1] (AdaKV's share of k each head keeps)");
  int n_safe = static_cast<int>(n_kept * alpha_safeguard);
  if (alpha_safeguard > 0) n_safe = n_kept > 0 ? std::max(1, n_safe) : 0;
  return n_safe;
}

std::vector<std::vector<int>> adakv_kept(const std::vector<std::vector<double>>& scores, int n_kept,
                                         double alpha_safeguard) {
  const size_t heads = scores.size();
  const size_t len = heads == 0 ? 0 : scores.front().size();
  for (const auto& row : scores) require(row.size() == len, "adakv: every KV head needs a score per prompt position");
  require(n_kept >= 0 && static_cast<size_t>(n_kept) <= len,
          "adakv: n_kept " + std::to_string(n_kept) + " is outside [0, " + std::to_string(len) + "]");
  const size_t n_safe = static_cast<size_t>(adakv_safeguard(n_kept, alpha_safeguard));
  std::vector<std::vector<char>> kept(heads, std::vector<char>(len, 0));
  // The safeguard: each head's n_safe best, the earlier position first among equals.
  std::vector<int> order(len);
  for (size_t h = 0; h < heads; ++h) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[h][a] > scores[h][b]; });
    for (size_t i = 0; i < n_safe; ++i) kept[h][static_cast<size_t>(order[i])] = 1;
  }
  // The shared rest: the best scores across heads, in head-major order among equals.
  std::vector<size_t> rest;
  for (size_t h = 0; h < heads; ++h)
    for (size_t j = 0; j < len; ++j)
      if (!kept[h][j]) rest.push_back(h * len + j);
  const size_t shared = heads * (static_cast<size_t>(n_kept) - n_safe);
  std::stable_sort(rest.begin(), rest.end(),
                   [&](size_t a, size_t b) { return scores[a / len][a % len] > scores[b / len][b % len]; });
  for (size_t i = 0; i < shared; ++i) kept[rest[i] / len][rest[i] % len] = 1;
  std::vector<std::vector<int>> out(heads);
  for (size_t h = 0; h < heads; ++h)
    for (size_t j = 0; j < len; ++j)
      if (kept[h][j]) out[h].push_back(static_cast<int>(j));
  return out;
}

}  // namespace kvo
