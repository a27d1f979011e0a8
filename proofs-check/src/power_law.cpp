#include "kvo/proofs_check/power_law.hpp"

#include <algorithm>
#include <boost/math/tools/minima.hpp>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "kvo/core/error.hpp"

namespace kvo {
namespace {

// The sample sorted, with ln x, the first index of each distinct value and suffix sums of ln x.
struct Sorted {
  std::vector<double> x, lx;
  std::vector<int> first;
  std::vector<double> suffix_ln;  // [i] = sum of lx[r], r >= i; n + 1 entries
  int n() const { return static_cast<int>(x.size()); }
};

Sorted prepare(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  Sorted d;
  d.x = std::move(x);
  const int n = d.n();
  d.lx.resize(static_cast<size_t>(n));
  d.suffix_ln.assign(static_cast<size_t>(n) + 1, 0.0);
  for (int i = 0; i < n; ++i) {
    d.lx[static_cast<size_t>(i)] = std::log(d.x[static_cast<size_t>(i)]);
    if (i == 0 || d.x[static_cast<size_t>(i)] != d.x[static_cast<size_t>(i) - 1]) d.first.push_back(i);
  }
  for (int i = n - 1; i >= 0; --i)
    d.suffix_ln[static_cast<size_t>(i)] = d.suffix_ln[static_cast<size_t>(i) + 1] + d.lx[static_cast<size_t>(i)];
  return d;
}

struct TailFit {
  int distinct = -1;  // index into Sorted::first of x_min
  double alpha = 0.0, ks = 2.0;
};

// The power law above the distinct value c: alpha = 1 + m / sum ln(x / x_min) (the continuous MLE)
// and the KS distance max |P(x) - S(x)| over the tail's distinct values, S(x) = the share of the
// tail below x (the convention of Clauset's plfit and of the powerlaw package).
TailFit tail_fit(const Sorted& d, int c) {
  const int s = d.first[static_cast<size_t>(c)], m = d.n() - s;
  const double lxm = d.lx[static_cast<size_t>(s)];
  const double denom = d.suffix_ln[static_cast<size_t>(s)] - m * lxm;
  TailFit t;
  t.distinct = c;
  if (!(denom > 0)) return t;  // a single distinct value: no exponent
  t.alpha = 1.0 + m / denom;
  double ks = 0.0;
  for (size_t u = static_cast<size_t>(c); u < d.first.size(); ++u) {
    const int at = d.first[u];
    const double emp = static_cast<double>(at - s) / m;
    const double th = 1.0 - std::exp((1.0 - t.alpha) * (d.lx[static_cast<size_t>(at)] - lxm));
    ks = std::max(ks, std::fabs(th - emp));
  }
  t.ks = ks;
  return t;
}

std::vector<int> candidates(const Sorted& d, const PowerLawOptions& o) {
  std::vector<int> all;
  for (size_t c = 0; c + 1 < d.first.size(); ++c)
    if (d.n() - d.first[c] >= o.min_tail) all.push_back(static_cast<int>(c));
  if (static_cast<int>(all.size()) <= o.max_candidates) return all;
  std::vector<int> picked;
  const double step = static_cast<double>(all.size() - 1) / (o.max_candidates - 1);
  for (int t = 0; t < o.max_candidates; ++t) picked.push_back(all[static_cast<size_t>(std::lround(t * step))]);
  picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
  return picked;
}

// The candidate with the smallest distance (the smaller x_min on ties); distinct = -1 when none.
TailFit scan(const Sorted& d, const PowerLawOptions& o) {
  TailFit best;
  for (int c : candidates(d, o)) {
    const TailFit t = tail_fit(d, c);
    if (t.ks < best.ks) best = t;
  }
  return best;
}

// ln erfc(z), also where erfc underflows (its asymptotic series for z >= 20).
double log_erfc(double z) {
  if (z < 20.0) return std::log(std::erfc(z));
  const double z2 = z * z;
  return -z2 - std::log(z) - 0.5 * std::log(std::numbers::pi) + std::log1p(-0.5 / z2 + 0.75 / (z2 * z2));
}

// ln p(x) of a log-normal truncated to [x_min, inf), from ln x.
double lognormal_logpdf(double lx, double mu, double sigma, double lxmin) {
  const double z = (lx - mu) / sigma;
  const double log_q = std::log(0.5) + log_erfc((lxmin - mu) / (sigma * std::numbers::sqrt2));
  return -lx - std::log(sigma) - 0.5 * std::log(2.0 * std::numbers::pi) - 0.5 * z * z - log_q;
}

// Minimises f on [lo, hi]: the best of a 32-point grid, then Brent's method between its neighbours.
template <class F>
std::pair<double, double> minimise(F f, double lo, double hi) {
  constexpr int kGrid = 32;
  int best = 0;
  double best_v = INFINITY;
  for (int g = 0; g <= kGrid; ++g) {
    const double v = f(lo + (hi - lo) * g / kGrid);
    if (v < best_v) best_v = v, best = g;
  }
  const double a = lo + (hi - lo) * std::max(0, best - 1) / kGrid,
               b = lo + (hi - lo) * std::min(kGrid, best + 1) / kGrid;
  const auto r = boost::math::tools::brent_find_minima(f, a, b, 40);
  return r.second <= best_v ? r : std::make_pair(lo + (hi - lo) * best / kGrid, best_v);
}

// Vuong's test from the pointwise log-likelihood differences.
LikelihoodRatio vuong(const std::vector<double>& diff) {
  LikelihoodRatio r;
  const double m = static_cast<double>(diff.size());
  double sum = 0.0;
  for (double v : diff) sum += v;
  const double mean = sum / m;
  double var = 0.0;
  for (double v : diff) var += (v - mean) * (v - mean);
  var /= m;
  r.ratio = sum;
  r.p_value = var > 0 ? std::erfc(std::fabs(sum) / std::sqrt(2.0 * m * var)) : (sum == 0 ? 1.0 : 0.0);
  return r;
}

// The fit's record at a chosen tail: the tests against a truncated log-normal and exponential.
PowerLawFit describe(const Sorted& d, const TailFit& t) {
  PowerLawFit f;
  f.n = d.n();
  const int s = d.first[static_cast<size_t>(t.distinct)], m = d.n() - s;
  f.n_tail = m;
  f.xmin = d.x[static_cast<size_t>(s)];
  f.alpha = t.alpha;
  f.ks = t.ks;
  const double lxm = d.lx[static_cast<size_t>(s)];
  std::vector<double> lp(static_cast<size_t>(m)), diff(static_cast<size_t>(m));
  double s1 = 0.0, s2 = 0.0, excess = 0.0;
  for (int i = s; i < d.n(); ++i) {
    const double lx = d.lx[static_cast<size_t>(i)];
    lp[static_cast<size_t>(i - s)] = std::log(t.alpha - 1.0) - lxm - t.alpha * (lx - lxm);
    s1 += lx;
    s2 += lx * lx;
    excess += d.x[static_cast<size_t>(i)] - f.xmin;
  }
  // Exponential above x_min: lambda = 1 / mean(x - x_min).
  const double lambda = m / excess;
  for (int i = s; i < d.n(); ++i)
    diff[static_cast<size_t>(i - s)] =
        lp[static_cast<size_t>(i - s)] - (std::log(lambda) - lambda * (d.x[static_cast<size_t>(i)] - f.xmin));
  f.exponential = vuong(diff);
  f.exponential.a = lambda;
  // Log-normal above x_min: the likelihood from the sums of ln x and (ln x)^2, profiled over mu.
  const double mu0 = s1 / m, s0 = std::max(std::sqrt(std::max(s2 / m - mu0 * mu0, 0.0)), 1e-6);
  auto neg_ll = [&](double mu, double sigma) {
    const double log_q = std::log(0.5) + log_erfc((lxm - mu) / (sigma * std::numbers::sqrt2));
    return s1 + m * std::log(sigma) + 0.5 * m * std::log(2.0 * std::numbers::pi) +
           (s2 - 2.0 * mu * s1 + m * mu * mu) / (2.0 * sigma * sigma) + m * log_q;
  };
  auto best_mu = [&](double sigma) {
    const double w = std::max(sigma, s0);
    return minimise([&](double mu) { return neg_ll(mu, sigma); }, mu0 - 30.0 * w, mu0 + 10.0 * w);
  };
  const auto outer = minimise([&](double t_sigma) { return best_mu(std::exp(t_sigma)).second; }, std::log(s0) - 5.0,
                              std::log(s0) + 5.0);
  const double sigma = std::exp(outer.first), mu = best_mu(sigma).first;
  for (int i = s; i < d.n(); ++i)
    diff[static_cast<size_t>(i - s)] =
        lp[static_cast<size_t>(i - s)] - lognormal_logpdf(d.lx[static_cast<size_t>(i)], mu, sigma, lxm);
  f.lognormal = vuong(diff);
  f.lognormal.a = mu;
  f.lognormal.b = sigma;
  return f;
}

Sorted checked(std::span<const double> sample, int min_tail) {
  for (double v : sample) require(std::isfinite(v) && v > 0, "power-law fit: every value must be finite and positive");
  require(static_cast<int>(sample.size()) > min_tail, "power-law fit: needs more than " + std::to_string(min_tail) +
                                                          " values, " + std::to_string(sample.size()) + " given");
  return prepare(std::vector<double>(sample.begin(), sample.end()));
}

}  // namespace

void PowerLawOptions::validate() const {
  require(max_candidates >= 2, "power-law fit: max_candidates must be at least 2");
  require(min_tail >= 2, "power-law fit: min_tail must be at least 2");
  require(bootstrap >= 0, "power-law fit: bootstrap must be 0 or more");
}

std::string PowerLawFit::verdict() const {
  if (p_value >= 0 && p_value < 0.1) return "rejected (p < 0.1)";
  const bool ln = lognormal.ratio < 0 && lognormal.p_value < 0.1;
  const bool ex = exponential.ratio < 0 && exponential.p_value < 0.1;
  if (ln && (!ex || lognormal.ratio <= exponential.ratio)) return "lognormal preferred";
  if (ex) return "exponential preferred";
  return "consistent";
}

PowerLawFit fit_power_law(std::span<const double> sample, const PowerLawOptions& o) {
  o.validate();
  const Sorted d = checked(sample, o.min_tail);
  const TailFit best = scan(d, o);
  require(best.distinct >= 0,
          "power-law fit: no x_min leaves " + std::to_string(o.min_tail) + " values above it with two distinct values");
  PowerLawFit f = describe(d, best);
  if (o.bootstrap == 0) return f;
  // Semi-parametric bootstrap: each value from the fitted power law with probability n_tail / n,
  // else drawn from the values below x_min; the whole fit again; p = share at least as far.
  std::mt19937_64 g(o.seed);
  auto u01 = [&g] { return static_cast<double>(g() >> 11) * 0x1p-53; };
  const int below = d.first[static_cast<size_t>(best.distinct)];
  const double tail_share = static_cast<double>(f.n_tail) / f.n, expo = -1.0 / (f.alpha - 1.0);
  int worse = 0;
  std::vector<double> synth(static_cast<size_t>(f.n));
  for (int b = 0; b < o.bootstrap; ++b) {
    for (auto& v : synth)
      v = (below == 0 || u01() < tail_share) ? f.xmin * std::pow(1.0 - u01(), expo)
                                             : d.x[static_cast<size_t>(g() % static_cast<std::uint64_t>(below))];
    const TailFit t = scan(prepare(synth), o);
    worse += (t.distinct < 0 || t.ks >= f.ks) ? 1 : 0;
  }
  f.bootstrap = o.bootstrap;
  f.p_value = static_cast<double>(worse) / o.bootstrap;
  return f;
}

PowerLawFit fit_power_law_at(std::span<const double> sample, double xmin) {
  const Sorted d = checked(sample, 1);
  const auto it = std::lower_bound(d.x.begin(), d.x.end(), xmin);
  require(it != d.x.end() && *it == xmin, "power-law fit: x_min must be one of the values");
  const int c =
      static_cast<int>(std::find(d.first.begin(), d.first.end(), static_cast<int>(it - d.x.begin())) - d.first.begin());
  require(c + 1 < static_cast<int>(d.first.size()), "power-law fit: x_min must leave two distinct values");
  return describe(d, tail_fit(d, c));
}

}  // namespace kvo
