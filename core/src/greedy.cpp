#include "kvo/core/greedy.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <random>

#include "kvo/core/error.hpp"

namespace kvo {
namespace {

void check_options(const SetFunction& f, const GreedyOptions& opt) {
  require(opt.budget >= 0, "greedy budget must be >= 0");
  require(opt.epsilon > 0.0 && opt.epsilon < 1.0, "stochastic greedy epsilon must be in (0, 1)");
  (void)f;
}

// Better pick: larger gain, then smaller index.
bool better(double g1, int j1, double g2, int j2) { return g1 > g2 || (g1 == g2 && j1 < j2); }

GreedyResult finish(const SetFunction& f, const Memo& memo, GreedyResult r, int k) {
  r.value = f.value(memo);
  r.upper_bound = aposteriori_bound(f, memo, k, &r.evaluations);
  const auto t = f.traits();
  r.bound_valid = t.monotone && t.submodular;
  return r;
}

}  // namespace

double nwf_factor(int k) {
  if (k <= 0) return 1.0;
  return 1.0 - std::pow(1.0 - 1.0 / k, k);
}

double aposteriori_bound(const SetFunction& f, const Memo& memo, int k, long long* evaluations) {
  const int n = f.ground_size();
  std::vector<char> in(static_cast<size_t>(n), 0);
  for (int j : memo.members) in[j] = 1;
  std::vector<double> gains;
  gains.reserve(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j)
    if (!in[j]) gains.push_back(std::max(0.0, f.gain(memo, j)));
  if (evaluations) *evaluations += static_cast<long long>(gains.size());
  const size_t take = std::min(gains.size(), static_cast<size_t>(std::max(k, 0)));
  std::partial_sort(gains.begin(), gains.begin() + static_cast<long>(take), gains.end(), std::greater<>());
  double s = f.value(memo);
  for (size_t t = 0; t < take; ++t) s += gains[t];
  return s;
}

GreedyResult naive_greedy(const SetFunction& f, const GreedyOptions& opt) {
  check_options(f, opt);
  const int n = f.ground_size();
  const int k = std::min(opt.budget, n);
  auto memo = f.empty_memo();
  std::vector<char> in(static_cast<size_t>(n), 0);
  GreedyResult r;
  for (int t = 0; t < k; ++t) {
    int best = -1;
    double best_gain = 0.0;
    for (int j = 0; j < n; ++j) {
      if (in[j]) continue;
      const double g = f.gain(*memo, j);
      ++r.evaluations;
      if (best < 0 || better(g, j, best_gain, best)) {
        best = j;
        best_gain = g;
      }
    }
    if (best < 0 || (opt.stop_if_nonpositive && best_gain <= 0.0)) break;
    f.add(*memo, best);
    in[best] = 1;
    r.picks.push_back(best);
    r.gains.push_back(best_gain);
  }
  return finish(f, *memo, std::move(r), opt.budget);
}

GreedyResult lazy_greedy(const SetFunction& f, const GreedyOptions& opt) {
  check_options(f, opt);
  const int n = f.ground_size();
  const int k = std::min(opt.budget, n);
  auto memo = f.empty_memo();
  GreedyResult r;
  struct Entry {
    double bound;
    int j;
    int round;  // pick count at which bound was computed
  };
  // Max-heap on (bound, -j): pops the largest bound, smallest index on ties.
  auto worse = [](const Entry& a, const Entry& b) { return better(b.bound, b.j, a.bound, a.j); };
  std::priority_queue<Entry, std::vector<Entry>, decltype(worse)> heap(worse);
  for (int j = 0; j < n; ++j) {
    heap.push({f.gain(*memo, j), j, 0});
    ++r.evaluations;
  }
  int round = 0;
  while (round < k && !heap.empty()) {
    Entry top = heap.top();
    heap.pop();
    if (top.round != round) {
      top.bound = f.gain(*memo, top.j);
      top.round = round;
      ++r.evaluations;
      // Accept only if it still beats every other (stale, hence upper) bound under the tie rule;
      // a fresh entry that ties a stale one with a smaller index goes back to let it refresh.
      if (!heap.empty() && !better(top.bound, top.j, heap.top().bound, heap.top().j)) {
        heap.push(top);
        continue;
      }
    }
    if (opt.stop_if_nonpositive && top.bound <= 0.0) break;
    f.add(*memo, top.j);
    r.picks.push_back(top.j);
    r.gains.push_back(top.bound);
    ++round;
  }
  return finish(f, *memo, std::move(r), opt.budget);
}

GreedyResult stochastic_greedy(const SetFunction& f, const GreedyOptions& opt) {
  check_options(f, opt);
  const int n = f.ground_size();
  const int k = std::min(opt.budget, n);
  auto memo = f.empty_memo();
  GreedyResult r;
  if (k == 0) return finish(f, *memo, std::move(r), opt.budget);
  std::mt19937_64 rng(opt.seed);
  const int sample =
      std::clamp(static_cast<int>(std::ceil(static_cast<double>(n) / k * std::log(1.0 / opt.epsilon))), 1, n);
  std::vector<int> rest(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) rest[j] = j;
  for (int t = 0; t < k && !rest.empty(); ++t) {
    const int s = std::min(sample, static_cast<int>(rest.size()));
    // Partial Fisher-Yates: the first s entries of rest become a uniform sample.
    for (int u = 0; u < s; ++u) {
      std::uniform_int_distribution<size_t> pick(static_cast<size_t>(u), rest.size() - 1);
      std::swap(rest[u], rest[pick(rng)]);
    }
    int best_pos = -1;
    double best_gain = 0.0;
    for (int u = 0; u < s; ++u) {
      const double g = f.gain(*memo, rest[u]);
      ++r.evaluations;
      if (best_pos < 0 || better(g, rest[u], best_gain, rest[best_pos])) {
        best_pos = u;
        best_gain = g;
      }
    }
    if (opt.stop_if_nonpositive && best_gain <= 0.0) break;
    const int j = rest[best_pos];
    f.add(*memo, j);
    r.picks.push_back(j);
    r.gains.push_back(best_gain);
    rest[best_pos] = rest.back();
    rest.pop_back();
  }
  return finish(f, *memo, std::move(r), opt.budget);
}

}  // namespace kvo
