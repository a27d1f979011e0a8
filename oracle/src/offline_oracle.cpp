// The flow solver (the reference the default assignment solver is tested against): successive
// shortest paths for min-cost flow, run on n + 1 time nodes. A residual path through a token's chain of the full
// network (docs/oracle.md) only ever enters at tau_{end+1} and leaves at some tau_{e+1}, so each token contributes
// "move my end from e_j to e" arcs between time nodes; Dijkstra on that dense graph costs O(n^2) per unit of flow (a
// binary heap picks nodes), with node potentials keeping reduced costs >= 0.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "kvo/core/error.hpp"
#include "kvo/oracle/offline_streaming.hpp"
#include "offline_common.hpp"

namespace kvo {
namespace detail {

HeavyView::HeavyView(const OfflineProblem& p) : n(p.n()), h(p.heavy()), r(p.recent) {
  arrival.resize(static_cast<size_t>(n));
  gain.resize(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) {
    arrival[j] = j + r;
    double own = 0.0;  // per token, then summed in token order (as ScheduleEvaluator sums it)
    for (int i = j; i < std::min(n, j + r); ++i) own += p.w(i, j);
    window += own;
    auto& g = gain[static_cast<size_t>(j)];
    g.assign(1, 0.0);
    for (int i = arrival[j]; i < n; ++i) g.push_back(g.back() + p.w(i, j));
  }
}

}  // namespace detail

std::vector<std::vector<int>> OfflineSolution::schedule() const {
  const int n = static_cast<int>(end.size());
  std::vector<std::vector<int>> s(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j)
    for (int i = j; i <= end[j] && i < n; ++i) s[static_cast<size_t>(i)].push_back(j);
  return s;
}

void validate(const OfflineProblem& p) {
  const int n = p.n();
  require(n >= 1 && p.w.cols() == n, "offline problem: w must be a non-empty square matrix");
  validate_offline_sizes(n, p.budget, p.recent);
  // Column by column (w is column-major), the message built only for a bad entry: this check runs
  // on every n x n problem, and building it per entry cost nearly as much as a periodic solve.
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i)
      if (const double x = p.w(i, j); !(std::isfinite(x) && x >= 0.0))
        throw Error("offline problem: w(" + std::to_string(i) + ", " + std::to_string(j) +
                    ") is negative or not finite");
}

double schedule_value(const OfflineProblem& p, const std::vector<std::vector<int>>& kept) {
  double v = 0.0;
  for (size_t i = 0; i < kept.size(); ++i)
    for (int j : kept[i]) v += p.w(static_cast<long>(i), j);
  return v;
}

double top_k_sum(std::vector<double>& row, int k) {
  const size_t take = std::min(row.size(), static_cast<size_t>(k));
  if (take == 0) return 0.0;
  std::nth_element(row.begin(), row.begin() + static_cast<long>(take) - 1, row.end(), std::greater<>());
  double s = 0.0;
  for (size_t t = 0; t < take; ++t) s += row[t];
  return s;
}

std::vector<double> top_k_row_sums(const Eigen::MatrixXd& w, int k) {
  const int n = static_cast<int>(w.rows());
  std::vector<double> out(static_cast<size_t>(n)), row;
  for (int i = 0; i < n; ++i) {
    row.resize(static_cast<size_t>(i) + 1);
    for (int j = 0; j <= i; ++j) row[static_cast<size_t>(j)] = w(i, j);
    out[static_cast<size_t>(i)] = top_k_sum(row, k);
  }
  return out;
}

double dual_bound(const OfflineProblem& p, const std::vector<int>& end, const std::vector<double>& price) {
  // The rows are checked as they are read (square, finite, >= 0).
  return evaluate_schedule(DenseWeightRows(p.w), p.budget, p.recent, end, price).upper;
}

OfflineSolution solve_offline_ssp(const OfflineProblem& p) {
  validate(p);
  const detail::HeavyView hv(p);
  const int n = hv.n, h = hv.h, V = n + 1;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<int> x(static_cast<size_t>(n), 0);     // heavy end index of each token (0: not admitted)
  std::vector<int> idle(static_cast<size_t>(n), 0);  // flow units on the backbone arc of step t
  std::vector<double> pi(static_cast<size_t>(V), 0.0), dist(static_cast<size_t>(V));
  // Initial potentials: shortest distances in the initial DAG (every arc points forward in time).
  std::fill(dist.begin(), dist.end(), inf);
  dist[0] = 0.0;
  for (int t = 0; t < n; ++t) {
    dist[t + 1] = std::min(dist[t + 1], dist[t]);
    const int j = t - hv.r;  // the token arriving at t
    if (j >= 0 && dist[t] < inf) {
      const auto& g = hv.gain[static_cast<size_t>(j)];
      for (size_t k = 1; k < g.size(); ++k) dist[t + k] = std::min(dist[t + k], dist[t] - g[k]);
    }
  }
  pi = dist;

  struct Pred {
    int node = -1;
    int token = -1;  // -1: backbone arc
    int index = 0;   // new heavy end index for a token arc
  };
  std::vector<Pred> pred(static_cast<size_t>(V));
  std::vector<char> done(static_cast<size_t>(V));
  std::vector<std::pair<double, int>> heap;
  std::vector<int> bucket_start(static_cast<size_t>(V) + 1), bucket(static_cast<size_t>(n));
  OfflineSolution sol;
  sol.method = "flow-ssp";
  int pushed = 0;
  // One Dijkstra on reduced costs from tau_0 (or, for the final potentials, from every node at
  // once, so that nodes tau_0 cannot reach get valid potentials too), then pi += dist.
  auto dijkstra = [&](bool from_everywhere) {
    // Tokens grouped by the node their current end leaves from: a_j + x_j.
    std::fill(bucket_start.begin(), bucket_start.end(), 0);
    for (int j = 0; j < n; ++j)
      if (hv.arrival[j] < n) ++bucket_start[static_cast<size_t>(hv.arrival[j] + x[j]) + 1];
    for (int v = 0; v < V; ++v) bucket_start[v + 1] += bucket_start[v];
    std::vector<int> fill(bucket_start.begin(), bucket_start.end() - 1);
    for (int j = 0; j < n; ++j)
      if (hv.arrival[j] < n) bucket[fill[hv.arrival[j] + x[j]]++] = j;
    std::fill(dist.begin(), dist.end(), from_everywhere ? 0.0 : inf);
    std::fill(done.begin(), done.end(), 0);
    dist[0] = 0.0;
    heap.clear();
    for (int v = 0; v < V; ++v)
      if (dist[v] < inf) heap.push_back({dist[v], v});
    std::make_heap(heap.begin(), heap.end(), std::greater<>());
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      const double du_reduced = heap.back().first;
      const int u = heap.back().second;  // not a structured binding: lambdas below capture it
      heap.pop_back();
      if (done[u] || du_reduced > dist[u]) continue;  // stale entry
      done[u] = 1;
      if (u == n && !from_everywhere) break;  // unsettled nodes get dist[n] below (still valid)
      const double base = dist[u] + pi[u];
      auto relax = [&](int v, double cost, int token, int index) {
        const double d = std::max(base + cost - pi[v], dist[u]);  // reduced costs are >= 0 up to rounding
        if (d < dist[v] && !done[v]) {
          dist[v] = d;
          pred[v] = {u, token, index};
          heap.push_back({d, v});
          std::push_heap(heap.begin(), heap.end(), std::greater<>());
        }
      };
      if (u < n && idle[u] < h) relax(u + 1, 0.0, -1, 0);
      if (u > 0 && idle[u - 1] > 0) relax(u - 1, 0.0, -1, 0);
      for (int b = bucket_start[u]; b < bucket_start[u + 1]; ++b) {
        const int j = bucket[b];
        const double* g = hv.gain[static_cast<size_t>(j)].data();
        const int count = static_cast<int>(hv.gain[static_cast<size_t>(j)].size());
        const double offset = base + g[x[j]];  // cost of moving the end to index k: g[x_j] - g[k]
        const int a = hv.arrival[j];
        const double* piv = pi.data() + a;
        double* dv = dist.data() + a;
        const double floor = dist[u];
        // A branch-free pass first (it vectorises): most scans improve nothing.
        int better = 0;
        for (int k = 0; k < count; ++k) better += (offset - g[k] - piv[k] < dv[k]) ? 1 : 0;
        if (better == 0) continue;
        for (int k = 0; k < count; ++k) {
          const double d = std::max(offset - g[k] - piv[k], floor);
          if (d < dv[k] && k != x[j] && !done[a + k]) {
            dv[k] = d;
            pred[a + k] = {u, j, k};
            heap.push_back({d, a + k});
            std::push_heap(heap.begin(), heap.end(), std::greater<>());
          }
        }
      }
    }
    for (int v = 0; v < V; ++v) pi[v] += done[v] ? dist[v] : std::min(dist[v], dist[n]);
  };
  // Exactly h units (the heavy slots) go from tau_0 to tau_n. Once the shortest path costs
  // nothing, the remaining units follow zero-cost shortest paths (usually the idle backbone),
  // which keeps the potentials valid for the certificate.
  while (pushed < h) {
    dijkstra(false);
    ++sol.work;
    const double path_cost = pi[n] - pi[0];  // actual cost of the shortest path just found
    const bool free_path = !(path_cost < -1e-12 * std::max(1.0, std::fabs(pi[n])));
    int amount = 1;
    if (free_path) {  // bottleneck of the path: token arcs carry 1, backbone arcs their residual
      amount = h - pushed;
      for (int v = n; v != 0; v = pred[v].node) {
        const Pred pr = pred[v];
        if (pr.token >= 0)
          amount = 1;
        else if (v == pr.node + 1)
          amount = std::min(amount, h - idle[pr.node]);
        else
          amount = std::min(amount, idle[v]);
      }
    }
    for (int v = n; v != 0;) {
      const Pred pr = pred[v];
      if (pr.token >= 0) {
        x[pr.token] = pr.index;
      } else if (v == pr.node + 1) {
        idle[pr.node] += amount;
      } else {
        idle[v] -= amount;
      }
      v = pr.node;
    }
    pushed += amount;
  }
  dijkstra(true);  // potentials of the final residual graph, for every node
  sol.end.resize(static_cast<size_t>(n));
  sol.value = hv.window;
  for (int j = 0; j < n; ++j) {
    sol.end[j] = hv.arrival[j] < n ? hv.end_of(j, x[j]) : n - 1;
    if (hv.arrival[j] < n) sol.value += hv.gain[static_cast<size_t>(j)][static_cast<size_t>(x[j])];
  }
  sol.price.resize(static_cast<size_t>(n));
  // Dual prices lambda_t = pi_t - pi_{t+1}: >= 0 where the heavy pool is full, 0 where it has
  // room (both backbone directions are residual there); clamped where no heavy token is alive.
  for (int t = 0; t < n; ++t) sol.price[t] = std::max(0.0, pi[t] - pi[t + 1]);
  sol.upper = dual_bound(p, sol.end, sol.price);
  return sol;
}

}  // namespace kvo
