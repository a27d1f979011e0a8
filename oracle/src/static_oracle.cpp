#include "kvo/oracle/static_oracle.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "kvo/core/error.hpp"
#include "kvo/core/greedy.hpp"

namespace kvo {

StaticSolution solve_topk(const ModularConcave& f, int k) {
  const auto& w = f.weights();
  require(f.traits().monotone, "top-k is exact only for non-negative weights");
  const int n = f.ground_size();
  const int take = std::clamp(k, 0, n);
  std::vector<int> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + take, idx.end(),
                    [&](int a, int b) { return w[a] > w[b] || (w[a] == w[b] && a < b); });
  StaticSolution s;
  s.set.assign(idx.begin(), idx.begin() + take);
  std::sort(s.set.begin(), s.set.end());
  s.value = f.evaluate(s.set);
  s.upper = s.value;
  s.exact = true;
  s.method = "topk";
  return s;
}

StaticSolution solve_brute_force(const SetFunction& f, int k) {
  const int n = f.ground_size();
  require(n <= 25, "brute force is limited to ground sets of at most 25 elements (got " + std::to_string(n) + ")");
  const int kk = std::clamp(k, 0, n);
  const bool monotone = f.traits().monotone;
  StaticSolution best;
  best.method = "brute-force";
  best.value = -std::numeric_limits<double>::infinity();
  std::vector<int> cur;
  // Depth-first over index order, carrying memos so each set costs one gain evaluation.
  std::function<void(int, const Memo&)> rec = [&](int start, const Memo& memo) {
    const int size = static_cast<int>(cur.size());
    if (!monotone || size == kk) {
      ++best.nodes;
      const double v = f.value(memo);
      if (v > best.value) {
        best.value = v;
        best.set = cur;
      }
    }
    if (size == kk) return;
    for (int j = start; j < n; ++j) {
      if (monotone && n - j < kk - size) break;  // not enough elements left to fill the set
      auto next = memo.clone();
      f.add(*next, j);
      ++best.evaluations;
      cur.push_back(j);
      rec(j + 1, *next);
      cur.pop_back();
    }
  };
  auto root = f.empty_memo();
  rec(0, *root);
  best.upper = best.value;
  best.exact = true;
  return best;
}

StaticSolution solve_branch_and_bound(const SetFunction& f, int k, const BranchAndBoundOptions& opt) {
  const auto traits = f.traits();
  require(traits.monotone && traits.submodular,
          "branch and bound needs a monotone submodular function; '" + traits.name + "' is not one by construction");
  const int n = f.ground_size();
  const int kk = std::clamp(k, 0, n);
  StaticSolution best;
  best.method = "branch-and-bound";
  GreedyOptions go;
  go.budget = kk;
  const GreedyResult g = lazy_greedy(f, go);
  best.set = g.picks;
  best.value = g.value;
  best.evaluations = g.evaluations;
  double root_bound = g.upper_bound;
  bool finished = true;

  // A node: the included set (memo) and the excluded elements. Children: include or exclude the
  // element with the largest gain. Bound: f(S) + sum of the (k - |S|) largest gains (NW 1981).
  std::vector<char> excluded(static_cast<size_t>(n), 0), included(static_cast<size_t>(n), 0);
  std::vector<std::pair<double, int>> gains;
  std::function<void(const Memo&)> rec = [&](const Memo& memo) {
    if (best.nodes >= opt.node_limit) {
      finished = false;
      return;
    }
    ++best.nodes;
    const int size = static_cast<int>(memo.members.size());
    const double fs = f.value(memo);
    if (fs > best.value) {
      best.value = fs;
      best.set = memo.members;
    }
    if (size == kk) return;
    std::vector<std::pair<double, int>> local;
    for (int j = 0; j < n; ++j)
      if (!included[j] && !excluded[j]) {
        local.emplace_back(std::max(0.0, f.gain(memo, j)), j);
        ++best.evaluations;
      }
    if (local.empty()) return;
    const size_t take = std::min(local.size(), static_cast<size_t>(kk - size));
    std::partial_sort(local.begin(), local.begin() + static_cast<long>(take), local.end(), [](auto& a, auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    double bound = fs;
    for (size_t t = 0; t < take; ++t) bound += local[t].first;
    if (bound <= best.value + opt.tolerance * std::max(1.0, std::fabs(best.value))) return;
    const int j = local.front().second;
    // Include j.
    auto with = memo.clone();
    f.add(*with, j);
    included[j] = 1;
    rec(*with);
    included[j] = 0;
    // Exclude j.
    excluded[j] = 1;
    rec(memo);
    excluded[j] = 0;
  };
  auto root = f.empty_memo();
  rec(*root);
  std::sort(best.set.begin(), best.set.end());
  best.exact = finished;
  best.upper = finished ? best.value : std::max(root_bound, best.value);
  return best;
}

StaticSolution solve_static(const SetFunction& f, int k, const BranchAndBoundOptions& opt) {
  if (const auto* mc = dynamic_cast<const ModularConcave*>(&f); mc && mc->traits().monotone) return solve_topk(*mc, k);
  const auto t = f.traits();
  if (f.ground_size() <= 16 || !(t.monotone && t.submodular)) return solve_brute_force(f, k);
  return solve_branch_and_bound(f, k, opt);
}

}  // namespace kvo
