// Classic facts about one set function on a small ground set, measured exactly or by sampling:
// submodularity and monotonicity scans (D.1-D.4), greedy against brute force (NWF), curvature
// (Conforti-Cornuejols), submodularity ratio (Das-Kempe), the a-posteriori bound (Leskovec) and
// greedy with a noisy gain oracle (Cor D.18). The claim checks C5-C8, C12, C16, C20-C22 run these
// on objectives built from a trace; the tests run them on functions whose answer is known.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kvo/core/set_function.hpp"

namespace kvo {

struct SubmodularityScan {
  long triples = 0, violations = 0;         // Condition 3: f(S+a1) + f(S+a2) >= f(S+a1+a2) + f(S)
  double worst = 0.0;                       // largest (right - left) among violations
  long pairs = 0, monotone_violations = 0;  // f(X) >= f(Y) for Y ⊂ X
  double worst_monotone = 0.0;              // largest f(Y) - f(X) among violations
  double rate() const { return triples ? static_cast<double>(violations) / static_cast<double>(triples) : 0.0; }
};

// Samples sets S ⊇ base (each other element joins with probability 1/2) and distinct a1, a2 outside
// S; Y ⊂ X pairs likewise. A violation exceeds tol * (1 + |f(S+a1+a2)|).
SubmodularityScan scan_submodularity(const SetFunction& f, std::span<const int> base, int samples, std::uint64_t seed,
                                     double tol = 1e-12);

// Greedy (naive, smallest index on ties) against the exact optimum by enumeration (n <= 25).
struct StaticBounds {
  int n = 0, k = 0;
  double greedy = 0.0, opt = 0.0;
  double nwf = 0.0;               // 1 - (1 - 1/k)^k
  double curvature = 0.0;         // total curvature c in [0, 1]
  double curvature_factor = 1.0;  // (1 - e^{-c}) / c (1 at c = 0)
  double aposteriori = 0.0;       // f(greedy) + sum of the k largest gains: >= OPT for monotone submodular f
  bool nwf_holds() const;
  bool curvature_holds() const;
  bool aposteriori_holds() const;
};
StaticBounds static_bounds(const SetFunction& f, int k);

// c = 1 - min_{j : f({j}) > 0} (f(V) - f(V \ {j})) / f({j}), clamped to [0, 1].
double total_curvature(const SetFunction& f);

// gamma_{U,k} = min over L ⊆ U and S ∩ L = ∅, 1 <= |S| <= k, of
// sum_{x in S} (f(L+x) - f(L)) / (f(L ∪ S) - f(L)), skipping denominators below 1e-9 of the scale
// (0/0 := 1; round-off is not evidence). Exhaustive: 2^|U| * C(n, <=k) evaluations.
double submodularity_ratio(const SetFunction& f, std::span<const int> U, int k);

// True when f(X) <= f(X + j) for every X and j (exhaustive, n <= 16).
bool is_monotone_exhaustive(const SetFunction& f, double tol = 1e-12);

// Greedy with an oracle O(S, j) = Delta(j | S) + eta, |eta| <= eps: random noise, or adversarial
// (+eps on elements outside a fixed optimum, -eps on its elements).
struct NoisyGreedy {
  int k = 0;
  double eps = 0.0, value = 0.0, opt = 0.0;
  double paper_bound = 0.0;    // (1 - 1/e) OPT - k (2 - 1/e) eps           (Cor D.18 as printed)
  double derived_bound = 0.0;  // (1 - (1 - 1/k)^k) (OPT - 2 k eps)         (docs/theory.md §2.5 [R])
};
NoisyGreedy noisy_greedy(const SetFunction& f, int k, double eps, bool adversarial, std::uint64_t seed);

}  // namespace kvo
