#include "kvo/proofs_check/set_function_checks.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <random>

#include "kvo/core/error.hpp"
#include "kvo/core/greedy.hpp"
#include "kvo/oracle/static_oracle.hpp"

namespace kvo {
namespace {

// f on the set of s's members, taken in increasing order (f's sums depend on the order).
double eval(const SetFunction& f, std::vector<int> s) {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return f.evaluate(s);
}

// The union of `sorted` (sorted, distinct) and `more` (any order), sorted and distinct: what eval()
// would build from their concatenation, by one merge instead of a sort of the whole set.
std::vector<int> sorted_union(const std::vector<int>& sorted, std::vector<int> more) {
  std::sort(more.begin(), more.end());
  std::vector<int> out(sorted.size() + more.size());
  std::merge(sorted.begin(), sorted.end(), more.begin(), more.end(), out.begin());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> members_of(unsigned mask, int n) {
  std::vector<int> s;
  for (int j = 0; j < n; ++j)
    if (mask >> j & 1u) s.push_back(j);
  return s;
}

}  // namespace

SubmodularityScan scan_submodularity(const SetFunction& f, std::span<const int> base, int samples, std::uint64_t seed,
                                     double tol) {
  SubmodularityScan r;
  const int n = f.ground_size();
  std::vector<char> in_base(static_cast<size_t>(n), 0);
  for (int j : base) in_base[static_cast<size_t>(j)] = 1;
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution coin(0.5);
  for (int t = 0; t < samples; ++t) {
    std::vector<int> s(base.begin(), base.end()), out;
    for (int j = 0; j < n; ++j)
      if (!in_base[static_cast<size_t>(j)]) (coin(rng) ? s : out).push_back(j);
    std::sort(s.begin(), s.end());  // every set below is evaluated in increasing order, as eval() does
    s.erase(std::unique(s.begin(), s.end()), s.end());
    if (out.size() >= 2) {
      std::shuffle(out.begin(), out.end(), rng);
      const int a1 = out[0], a2 = out[1];
      const double left = f.evaluate(sorted_union(s, {a1})) + f.evaluate(sorted_union(s, {a2})),
                   f12 = f.evaluate(sorted_union(s, {a1, a2})), right = f12 + f.evaluate(s);
      ++r.triples;
      if (right - left > tol * (1.0 + std::fabs(f12))) {
        ++r.violations;
        r.worst = std::max(r.worst, right - left);
      }
    }
    if (!out.empty()) {  // Y = s ⊂ X = s + some of out
      std::vector<int> added;
      for (int j : out)
        if (coin(rng)) added.push_back(j);
      if (added.empty()) added.push_back(out.front());
      const double fx = f.evaluate(sorted_union(s, std::move(added))), fy = f.evaluate(s);
      ++r.pairs;
      if (fy - fx > tol * (1.0 + std::fabs(fx))) {
        ++r.monotone_violations;
        r.worst_monotone = std::max(r.worst_monotone, fy - fx);
      }
    }
  }
  return r;
}

bool StaticBounds::nwf_holds() const { return greedy >= nwf * opt - 1e-12 * (1.0 + std::fabs(opt)); }
bool StaticBounds::curvature_holds() const { return greedy >= curvature_factor * opt - 1e-12 * (1.0 + std::fabs(opt)); }
bool StaticBounds::aposteriori_holds() const { return aposteriori >= opt - 1e-12 * (1.0 + std::fabs(opt)); }

double total_curvature(const SetFunction& f) {
  const int n = f.ground_size();
  std::vector<int> all(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) all[static_cast<size_t>(j)] = j;
  const double fv = f.evaluate(all);
  const std::vector<double> loo = f.leave_one_out();
  double worst = 1.0;
  bool any = false;
  for (int j = 0; j < n; ++j) {
    const int one[1] = {j};
    const double fj = f.evaluate(one);
    if (fj <= 0) continue;
    worst = std::min(worst, (fv - loo[static_cast<size_t>(j)]) / fj);
    any = true;
  }
  return any ? std::clamp(1.0 - worst, 0.0, 1.0) : 0.0;
}

StaticBounds static_bounds(const SetFunction& f, int k) {
  StaticBounds b;
  b.n = f.ground_size();
  b.k = std::min(k, b.n);
  require(b.n <= 25, "static_bounds enumerates subsets: ground set of " + std::to_string(b.n) + " > 25");
  GreedyOptions go;
  go.budget = b.k;
  const GreedyResult g = naive_greedy(f, go);
  b.greedy = g.value;
  b.aposteriori = g.upper_bound;
  b.opt = solve_brute_force(f, b.k).value;
  b.nwf = nwf_factor(b.k);
  b.curvature = total_curvature(f);
  b.curvature_factor = b.curvature < 1e-12 ? 1.0 : (1.0 - std::exp(-b.curvature)) / b.curvature;
  return b;
}

double submodularity_ratio(const SetFunction& f, std::span<const int> U, int k) {
  const int n = f.ground_size();
  require(U.size() <= 16 && n <= 24, "submodularity_ratio is exhaustive: |U| <= 16 and n <= 24");
  double gamma = std::numeric_limits<double>::infinity();
  const unsigned subsets_u = 1u << U.size();
  for (unsigned lm = 0; lm < subsets_u; ++lm) {
    std::vector<int> L;
    for (size_t t = 0; t < U.size(); ++t)
      if (lm >> t & 1u) L.push_back(U[t]);
    std::sort(L.begin(), L.end());
    const double fl = f.evaluate(L);
    std::vector<char> inl(static_cast<size_t>(n), 0);
    for (int j : L) inl[static_cast<size_t>(j)] = 1;
    std::vector<int> rest;
    std::vector<double> single(static_cast<size_t>(n), 0.0);
    for (int j = 0; j < n; ++j)
      if (!inl[static_cast<size_t>(j)]) {
        rest.push_back(j);
        single[static_cast<size_t>(j)] = eval(f,
                                              [&] {
                                                auto x = L;
                                                x.push_back(j);
                                                return x;
                                              }()) -
                                         fl;
      }
    // Enumerate S ⊆ rest with 1 <= |S| <= k by a stack of indices.
    const int m = static_cast<int>(rest.size()), kk = std::min(k, m);
    std::vector<int> idx;
    std::function<void(int)> rec = [&](int from) {
      if (!idx.empty()) {
        std::vector<int> s = L;
        double num = 0.0;
        for (int t : idx) {
          s.push_back(rest[static_cast<size_t>(t)]);
          num += single[static_cast<size_t>(rest[static_cast<size_t>(t)])];
        }
        const double fs = eval(f, s), den = fs - fl;
        // Differences of nearly equal values carry a relative error of about eps * |f| / den:
        // denominators below 1e-9 of the scale are round-off, not evidence, and are skipped.
        if (den > 1e-9 * (1.0 + std::fabs(fs))) gamma = std::min(gamma, num / den);
      }
      if (static_cast<int>(idx.size()) == kk) return;
      for (int t = from; t < m; ++t) {
        idx.push_back(t);
        rec(t + 1);
        idx.pop_back();
      }
    };
    rec(0);
  }
  return std::isfinite(gamma) ? gamma : 1.0;
}

bool is_monotone_exhaustive(const SetFunction& f, double tol) {
  const int n = f.ground_size();
  require(n <= 16, "is_monotone_exhaustive: ground set of " + std::to_string(n) + " > 16");
  std::vector<double> v(1u << n);
  for (unsigned m = 0; m < v.size(); ++m) v[m] = f.evaluate(members_of(m, n));
  for (unsigned m = 0; m < v.size(); ++m)
    for (int j = 0; j < n; ++j)
      if (!(m >> j & 1u) && v[m | (1u << j)] < v[m] - tol * (1.0 + std::fabs(v[m]))) return false;
  return true;
}

NoisyGreedy noisy_greedy(const SetFunction& f, int k, double eps, bool adversarial, std::uint64_t seed) {
  NoisyGreedy r;
  const int n = f.ground_size();
  r.k = std::min(k, n);
  r.eps = eps;
  const StaticSolution opt = solve_brute_force(f, r.k);
  r.opt = opt.value;
  std::vector<char> in_opt(static_cast<size_t>(n), 0);
  for (int j : opt.set) in_opt[static_cast<size_t>(j)] = 1;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(-eps, eps);
  auto memo = f.empty_memo();
  std::vector<char> taken(static_cast<size_t>(n), 0);
  for (int t = 0; t < r.k; ++t) {
    int best = -1;
    double best_o = 0.0;
    for (int j = 0; j < n; ++j) {
      if (taken[static_cast<size_t>(j)]) continue;
      const double eta = adversarial ? (in_opt[static_cast<size_t>(j)] ? -eps : eps) : noise(rng);
      const double o = f.gain(*memo, j) + eta;
      if (best < 0 || o > best_o) {
        best = j;
        best_o = o;
      }
    }
    f.add(*memo, best);
    taken[static_cast<size_t>(best)] = 1;
  }
  r.value = f.value(*memo);
  const double e = std::numbers::e;
  r.paper_bound = (1.0 - 1.0 / e) * r.opt - r.k * (2.0 - 1.0 / e) * eps;
  r.derived_bound = nwf_factor(r.k) * (r.opt - 2.0 * r.k * eps);
  return r;
}

}  // namespace kvo
