// The small-n exact solvers of the offline problem: DP over cache states (any per-step
// objective) and enumeration of every schedule (additive objective; the tests' oracle).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <unordered_map>

#include "kvo/core/error.hpp"
#include "kvo/oracle/static_oracle.hpp"
#include "offline_common.hpp"

namespace kvo {
namespace {

std::vector<int> members(std::uint64_t mask) {
  std::vector<int> v;
  for (int j = 0; mask; ++j, mask >>= 1)
    if (mask & 1) v.push_back(j);
  return v;
}

}  // namespace

OfflineSolution solve_offline_dp(int n, int budget, int recent, const StepObjective& g, bool monotone) {
  require(n >= 1 && n <= 40, "the cache-state DP is limited to n <= 40");
  require(recent >= 0 && recent <= budget && budget <= n, "offline DP: need 0 <= recent <= budget <= n");
  struct DpCell {
    double value;
    std::uint64_t prev;
  };
  std::vector<std::unordered_map<std::uint64_t, DpCell>> layer(static_cast<size_t>(n));
  OfflineSolution sol;
  sol.method = "dp";
  std::unordered_map<std::uint64_t, DpCell> start{{0, {0.0, 0}}};
  for (int i = 0; i < n; ++i) {
    const auto& from = i == 0 ? start : layer[static_cast<size_t>(i) - 1];
    auto& to = layer[static_cast<size_t>(i)];
    std::uint64_t window = 0;
    for (int j = std::max(0, i - recent + 1); j <= i; ++j) window |= std::uint64_t{1} << j;
    for (const auto& [prev, cell] : from) {
      const std::uint64_t G = prev | (std::uint64_t{1} << i);
      const int size = std::popcount(G);
      std::vector<std::uint64_t> options;
      if (monotone) {
        if (size <= budget) {
          options.push_back(G);
        } else {
          for (std::uint64_t rest = G & ~window; rest; rest &= rest - 1) options.push_back(G & ~(rest & -rest));
        }
      } else {  // every T with window ⊆ T ⊆ G, |T| <= k
        const std::uint64_t free = G & ~window;
        for (std::uint64_t sub = free;; sub = (sub - 1) & free) {
          if (std::popcount(sub | window) <= budget) options.push_back(sub | window);
          if (sub == 0) break;
        }
      }
      for (std::uint64_t T : options) {
        ++sol.work;
        const double v = cell.value + g(i, members(T));
        auto it = to.find(T);
        if (it == to.end() || v > it->second.value) to[T] = {v, prev};
      }
    }
  }
  const auto& last = layer.back();
  require(!last.empty(), "offline DP: no feasible schedule");
  auto best = std::max_element(last.begin(), last.end(), [](auto& a, auto& b) {
    return a.second.value < b.second.value || (a.second.value == b.second.value && a.first > b.first);
  });
  sol.value = sol.upper = best->second.value;
  sol.end.assign(static_cast<size_t>(n), -1);
  std::uint64_t mask = best->first;
  for (int i = n - 1; i >= 0; --i) {
    for (int j : members(mask))
      if (sol.end[j] < 0) sol.end[j] = i;
    mask = layer[static_cast<size_t>(i)].at(mask).prev;
  }
  for (int j = 0; j < n; ++j)
    if (sol.end[j] < 0) sol.end[j] = j - 1;
  return sol;
}

OfflineSolution solve_offline_brute(const OfflineProblem& p) {
  validate(p);
  require(p.n() <= 12, "enumeration of every schedule is limited to n <= 12");
  const detail::HeavyView hv(p);
  const int n = hv.n;
  std::vector<int> load(static_cast<size_t>(n), 0), x(static_cast<size_t>(n), 0), best_x;
  double best = -std::numeric_limits<double>::infinity();
  OfflineSolution sol;
  sol.method = "enumeration";
  // Token by token, every heavy end that keeps each step within the heavy budget.
  auto rec = [&](auto&& self, int j, double acc) -> void {
    if (j == n) {
      ++sol.work;
      if (acc > best) {
        best = acc;
        best_x = x;
      }
      return;
    }
    const int a = hv.arrival[j];
    x[j] = 0;
    self(self, j + 1, acc);
    for (int k = 1; a < n && k <= n - a; ++k) {
      if (load[a + k - 1] >= hv.h) break;  // longer stays would also cross this full step
      ++load[a + k - 1];
      x[j] = k;
      self(self, j + 1, acc + hv.gain[static_cast<size_t>(j)][static_cast<size_t>(k)]);
    }
    for (int k = 1; a < n && k <= n - a && x[j] >= k; ++k) --load[a + k - 1];
    x[j] = 0;
  };
  rec(rec, 0, 0.0);
  sol.value = sol.upper = best + hv.window;
  sol.end.resize(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) sol.end[j] = hv.arrival[j] < n ? hv.end_of(j, best_x[j]) : n - 1;
  return sol;
}

OfflineSolution solve_offline_enumerate(int n, int budget, int recent, const StepObjective& g) {
  require(n >= 1 && n <= 10, "enumeration under a general objective is limited to n <= 10");
  require(recent >= 0 && recent <= budget && budget <= n, "offline enumeration: need 0 <= recent <= budget <= n");
  const int h = budget - recent;
  std::vector<int> end(static_cast<size_t>(n)), load(static_cast<size_t>(n), 0), best_end;
  double best = -std::numeric_limits<double>::infinity();
  OfflineSolution sol;
  sol.method = "enumeration";
  auto rec = [&](auto&& self, int j) -> void {
    if (j == n) {
      ++sol.work;
      double v = 0.0;
      std::vector<int> cache;
      for (int i = 0; i < n; ++i) {
        cache.clear();
        for (int t = 0; t <= i; ++t)
          if (end[t] >= i) cache.push_back(t);
        v += g(i, cache);
      }
      if (v > best) {
        best = v;
        best_end = end;
      }
      return;
    }
    const int a = j + recent;  // joins the heavy pool here
    end[j] = std::min(a - 1, n - 1);
    self(self, j + 1);
    for (int e = a; e < n; ++e) {
      if (load[e] >= h) {
        for (int u = a; u < e; ++u) --load[u];
        end[j] = std::min(a - 1, n - 1);
        return;
      }
      ++load[e];
      end[j] = e;
      self(self, j + 1);
    }
    for (int u = a; u < n; ++u) --load[u];
    end[j] = std::min(a - 1, n - 1);
  };
  rec(rec, 0);
  sol.value = sol.upper = best;
  sol.end = best_end;
  return sol;
}

OfflineUpperBound offline_upper_bound(int n, int budget, int recent,
                                      const std::function<std::unique_ptr<SetFunction>(int step)>& objective) {
  require(n >= 1 && recent >= 0 && recent <= budget && budget <= n, "offline bound: need 0 <= recent <= budget <= n");
  OfflineUpperBound b;
  OfflineProblem relax;
  relax.w = Eigen::MatrixXd::Zero(n, n);
  relax.budget = budget;
  relax.recent = recent;
  double empty_sum = 0.0;
  for (int i = 0; i < n; ++i) {
    const auto f = objective(i);
    require(f->ground_size() == i + 1, "offline bound: g_" + std::to_string(i) + " must have ground set {0..i}");
    const auto t = f->traits();
    require(t.monotone && t.submodular,
            "offline bound: g_" + std::to_string(i) + " (" + t.name + ") is not monotone submodular by construction");
    b.static_sum += solve_static(*f, budget).upper;
    const auto memo = f->empty_memo();
    empty_sum += f->value(*memo);
    for (int j = 0; j <= i; ++j) relax.w(i, j) = std::max(0.0, f->gain(*memo, j));
  }
  b.modular_flow = solve_offline(relax).upper + empty_sum;
  return b;
}

}  // namespace kvo
