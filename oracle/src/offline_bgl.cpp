// The comparison baseline: Boost Graph's successive_shortest_path_nonnegative_weights on the
// full chain network of docs/oracle.md (time nodes plus one node per (token, heavy step)).
// Costs are made non-negative by potentials from one topological pass over the DAG, which
// shifts every source-sink path by the same constant, then scaled to exact fixed point.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/successive_shortest_path_nonnegative_weights.hpp>
#include <cmath>
#include <limits>

#include "offline_common.hpp"

namespace kvo {
namespace {

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using Graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, long,
                    boost::property<boost::edge_residual_capacity_t, long,
                                    boost::property<boost::edge_reverse_t, Traits::edge_descriptor,
                                                    boost::property<boost::edge_weight_t, long long>>>>>;

// Boost's Dijkstra rejects any negative reduced weight, and rounding in doubles produces some;
// costs go to fixed point (2^-40 resolution) so its arithmetic is exact.
constexpr double kScale = 1099511627776.0;

}  // namespace

OfflineSolution solve_offline_bgl(const OfflineProblem& p) {
  validate(p);
  const detail::HeavyView hv(p);
  const int n = hv.n;
  // Node ids: time node t = t (0..n); chain node (j, step i) numbered after them.
  std::vector<int> first(static_cast<size_t>(n), -1);
  int next = n + 1;
  for (int j = 0; j < n; ++j)
    if (hv.arrival[j] < n) {
      first[j] = next;
      next += n - hv.arrival[j];
    }
  auto chain = [&](int j, int i) { return first[j] + (i - hv.arrival[j]); };
  struct Arc {
    int u, v;
    long cap;
    double cost;
  };
  std::vector<Arc> arcs;
  const int source = next++;  // a super-source feeding exactly h units (the heavy slots) into tau_0
  arcs.push_back({source, 0, hv.h, 0.0});
  for (int t = 0; t < n; ++t) arcs.push_back({t, t + 1, hv.h, 0.0});
  for (int j = 0; j < n; ++j) {
    const int a = hv.arrival[j];
    if (a >= n) continue;
    arcs.push_back({a, chain(j, a), 1, -p.w(a, j)});
    for (int i = a; i < n; ++i) {
      if (i + 1 < n) arcs.push_back({chain(j, i), chain(j, i + 1), 1, -p.w(i + 1, j)});
      arcs.push_back({chain(j, i), i + 1, 1, 0.0});
    }
  }
  // Potentials: shortest distances from node 0 in topological (time-major) order.
  std::vector<double> d(static_cast<size_t>(next), std::numeric_limits<double>::infinity());
  d[source] = 0.0;
  d[0] = 0.0;
  std::vector<std::vector<const Arc*>> out(static_cast<size_t>(next));
  for (const auto& a : arcs) out[static_cast<size_t>(a.u)].push_back(&a);
  for (int t = 0; t <= n; ++t) {
    auto visit = [&](int u) {
      for (const Arc* a : out[static_cast<size_t>(u)]) d[a->v] = std::min(d[a->v], d[u] + a->cost);
    };
    visit(t);
    for (int j = 0; j < n; ++j)
      if (t < n && hv.arrival[j] <= t) visit(chain(j, t));
  }
  Graph g(static_cast<size_t>(next));
  auto cap = get(boost::edge_capacity, g);
  auto rev = get(boost::edge_reverse, g);
  auto weight = get(boost::edge_weight, g);
  std::vector<std::pair<Traits::edge_descriptor, const Arc*>> forward;
  for (const auto& a : arcs) {
    const double reduced = std::isfinite(d[a.v]) ? std::max(0.0, a.cost + d[a.u] - d[a.v]) : 0.0;
    const auto e = boost::add_edge(static_cast<size_t>(a.u), static_cast<size_t>(a.v), g).first;
    const auto r = boost::add_edge(static_cast<size_t>(a.v), static_cast<size_t>(a.u), g).first;
    cap[e] = a.cap;
    cap[r] = 0;
    rev[e] = r;
    rev[r] = e;
    weight[e] = std::llround(reduced * kScale);
    weight[r] = -weight[e];
    forward.emplace_back(e, &a);
  }
  boost::successive_shortest_path_nonnegative_weights(g, static_cast<size_t>(source), static_cast<size_t>(n));
  auto residual = get(boost::edge_residual_capacity, g);
  OfflineSolution sol;
  sol.method = "bgl-ssp";
  sol.end.resize(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) sol.end[j] = hv.arrival[j] < n ? hv.arrival[j] - 1 : n - 1;
  sol.value = hv.window;
  for (const auto& [e, a] : forward) {
    const long flow = cap[e] - residual[e];
    if (flow <= 0 || a->cap != 1) continue;
    sol.value -= a->cost * static_cast<double>(flow);
    if (a->v <= n && a->u > n && a->u != source) {  // an eviction arc: its chain's token ends at step v - 1
      for (int j = 0; j < n; ++j)
        if (first[j] >= 0 && a->u >= first[j] && a->u < first[j] + n - hv.arrival[j]) sol.end[j] = a->v - 1;
    }
  }
  sol.upper = sol.value;  // BGL gives no dual here; the certificate comes from the default solver
  sol.work = static_cast<long long>(arcs.size());
  return sol;
}

}  // namespace kvo
