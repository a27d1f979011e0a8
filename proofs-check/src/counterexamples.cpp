// Constructed instances for defects that need a specific shape rather than a trace: D6 (the
// one-sided eps0 of Lemma D.30 breaks its conclusion) and D7 (a forced new token breaks link (a)
// of Lemma D.29 although f is monotone). The numbers are computed here, not typed in.
#include "kvo/proofs_check/counterexamples.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace kvo {
namespace {

double sum_w(const std::vector<double>& w, const std::vector<int>& s) {
  double t = 0.0;
  for (int j : s) t += w[static_cast<size_t>(j)];
  return t;
}
double topk(std::vector<double> w, int k) {
  std::sort(w.begin(), w.end(), std::greater<>());
  double t = 0.0;
  for (int x = 0; x < k && x < static_cast<int>(w.size()); ++x) t += w[static_cast<size_t>(x)];
  return t;
}
CheckRecord constructed(const std::string& id, const std::string& variant, bool holds, double metric) {
  return make_record(id, variant, ClaimKind::Defect, holds, metric);
}

}  // namespace

CheckRecord one_sided_eps_instance() {
  // Tokens 0..3, k = 2, modular f_i with weights w (token 0 heavy at every step), f~ = 0.
  const int k = 2;
  const std::vector<double> w = {1.0, 0.01, 0.01, 0.01};
  const std::vector<int> S1 = {0, 1}, G2 = {0, 1, 2};
  // f~ = 0: every leave-one-out value ties, so the tie rule evicts the oldest token.
  std::vector<int> S2 = G2;
  S2.erase(S2.begin());
  const double eps_one = 0.0;           // max(f~ - f) over all sets: f >= 0 = f~
  const double eps_two = sum_w(w, S1);  // max |f - f~| over the sets the chain uses
  const double opt2 = topk({w[0], w[1], w[2]}, k), opt3 = topk(w, k);
  const double line = 1.0 - 1.0 / std::numbers::e;
  const bool value_hyp = sum_w(w, S1) >= line * opt2 - 1 * eps_one;
  const double gamma = std::max(0.0, 1.0 - opt2 / opt3);  // UDC2 (lemma direction)
  const double theta_tilde = 0.0;                         // UDC1 for f~ = 0 holds with theta = 0
  const int i_plus_1 = 3;                                 // the step that builds S2 is the third token
  const double conclusion_one = line * (1 - theta_tilde) * (1 - gamma) * opt3 - i_plus_1 * eps_one;
  const double conclusion_two = line * (1 - theta_tilde) * (1 - gamma) * opt3 - 2 * i_plus_1 * eps_two;
  const double value = sum_w(w, S2);
  auto r = constructed("D6", "constructed (f~ = 0)", value >= conclusion_one, (conclusion_one - value) / opt3);
  r.detail = {{"weights", w},
              {"k", k},
              {"hypotheses_hold", value_hyp && gamma <= 1e-12},
              {"f_value", value},
              {"one_sided_bound", conclusion_one},
              {"two_sided_bound", conclusion_two},
              {"two_sided_holds", value >= conclusion_two}};
  return r;
}

CheckRecord forced_token_instance() {
  // Accumulated scores after step 2 over G = {0, 1, 2}; k = 2; a window r = 1 protects token 2.
  const std::vector<double> score = {0.9, 0.6, 0.1};
  const std::vector<int> before = {0, 1};  // S_{i-1}
  const std::vector<int> forced = {0, 2};  // the window keeps 2 and evicts the smaller of {0, 1}
  const double fa = sum_w(score, forced), fb = sum_w(score, before);
  auto r = constructed("D7", "constructed (window r = 1)", fa >= fb, (fb - fa) / fb);
  r.detail = {{"scores", score}, {"f_before", fb}, {"f_after", fa}, {"monotone", true}};
  return r;
}

}  // namespace kvo
