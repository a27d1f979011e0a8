// Power-law fits of a positive sample as Clauset, Shalizi and Newman (SIAM Review 2009) make them:
// x_min by the smallest Kolmogorov-Smirnov distance, the exponent by maximum likelihood above it, a
// semi-parametric bootstrap p-value, and Vuong's likelihood-ratio tests against a log-normal and an
// exponential fitted to the same tail. The E2 check (docs/checks.md#e2) runs it per head.
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace kvo {

struct PowerLawOptions {
  // x_min candidates: the distinct values but the largest that leave at least min_tail values at
  // or above them; when there are more than max_candidates, that many evenly spaced by rank.
  int max_candidates = 100;
  int min_tail = 10;
  int bootstrap = 100;     // synthetic samples for the goodness-of-fit p-value (0: no p-value)
  std::uint64_t seed = 0;  // of the bootstrap
  void validate() const;   // kvo::Error naming the option
};

// A likelihood-ratio test of the power law against an alternative on the tail x >= x_min.
struct LikelihoodRatio {
  double ratio = 0.0;       // R = sum over the tail of ln p_power(x) - ln p_alt(x): > 0 favours the power law
  double p_value = 1.0;     // Vuong's two-sided significance of R's sign (erfc(|R| / sqrt(2 m var)))
  double a = 0.0, b = 0.0;  // the alternative's fitted parameters: log-normal (mu, sigma), exponential (lambda, -)
};

struct PowerLawFit {
  int n = 0;       // sample size
  int n_tail = 0;  // values at or above x_min
  double xmin = 0.0, alpha = 0.0;
  double ks = 0.0;            // Kolmogorov-Smirnov distance of the tail to the fitted power law
  double p_value = -1.0;      // bootstrap goodness of fit; -1 when not computed
  int bootstrap = 0;          // synthetic samples behind p_value
  LikelihoodRatio lognormal;  // truncated to [x_min, inf), fitted by maximum likelihood
  LikelihoodRatio exponential;
  // "consistent" (p >= 0.1 and no alternative significantly better at 0.1), "rejected (p < 0.1)",
  // "lognormal preferred" or "exponential preferred" (p >= 0.1, but R < 0 with its p < 0.1).
  std::string verdict() const;
  bool consistent() const { return verdict() == "consistent"; }
};

// The whole procedure. kvo::Error for a value that is not finite and positive, or fewer than
// min_tail + 1 values.
PowerLawFit fit_power_law(std::span<const double> sample, const PowerLawOptions& options = {});
// The tail above a given x_min (no search, no bootstrap): exponent, distance and both tests.
PowerLawFit fit_power_law_at(std::span<const double> sample, double xmin);

}  // namespace kvo
