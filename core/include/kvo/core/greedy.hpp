// Greedy maximisers for any SetFunction under |S| <= k: naive, lazy (CELF) and stochastic.
// Tie rule everywhere: among equal gains the smallest element index wins, so naive and lazy
// greedy return the same picks. Each result carries the a-posteriori upper bound on OPT_k
// (Leskovec et al. 2007; docs/theory.md §3.4), valid when f is monotone submodular.
#pragma once
#include <cstdint>
#include <vector>

#include "kvo/core/set_function.hpp"

namespace kvo {

struct GreedyOptions {
  int budget = 1;                    // k
  bool stop_if_nonpositive = false;  // stop early when the best gain is <= 0 (non-monotone f)
  double epsilon = 0.1;              // stochastic greedy: sample (n/k) ln(1/epsilon) per pick
  std::uint64_t seed = 0;            // stochastic greedy only
};

struct GreedyResult {
  std::vector<int> picks;     // in pick order
  std::vector<double> gains;  // gain of each pick when it was taken
  double value = 0.0;         // f(picks)
  // f(A) + sum of the k largest positive gains Delta(s | A) over s not in A: >= OPT_k when f is
  // monotone submodular (bound_valid tells whether f claims to be).
  double upper_bound = 0.0;
  bool bound_valid = false;
  long long evaluations = 0;  // gain evaluations spent (the bound's n included)
};

GreedyResult naive_greedy(const SetFunction& f, const GreedyOptions& opt);
GreedyResult lazy_greedy(const SetFunction& f, const GreedyOptions& opt);
GreedyResult stochastic_greedy(const SetFunction& f, const GreedyOptions& opt);

// f(A) + sum of the k largest max(0, Delta(s|A)), s not in A, for the set A memoised in memo.
double aposteriori_bound(const SetFunction& f, const Memo& memo, int k, long long* evaluations = nullptr);

// The finite-k greedy factor 1 - (1 - 1/k)^k of Nemhauser, Wolsey and Fisher (1978).
double nwf_factor(int k);

}  // namespace kvo
