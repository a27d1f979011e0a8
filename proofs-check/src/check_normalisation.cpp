// C2: the normaliser of Def 2.2/D.10 computed two ways (gather over S, and the zero-filled-row
// formula with the -1 fix) and sum_j o_ij = 1; D2: the mass the unfixed formula leaves on evicted
// coordinates. fp64, unshifted exponentials (steps whose logits exceed 700 are skipped).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "head_data.hpp"

namespace kvo::detail {

void check_normalisation(const HeadData& h, const TraceChecksOptions& o, std::vector<CheckRecord>& out) {
  if (!check_enabled(o, "C2") && !check_enabled(o, "D2")) return;
  if (h.view->head_dim() == 0) return;  // dense-attention traces carry no logits
  const PolicyRun* run = h.run(PolicyId::H2OPaper);
  if (run == nullptr) run = h.runs.empty() ? nullptr : &h.runs.front();
  if (run == nullptr) return;
  std::vector<int> keys;
  std::vector<double> lg;
  std::vector<char> in(static_cast<size_t>(h.n), 0);
  double worst = 0.0, worst_sum = 0.0, excess = 0.0;
  long worst_step = -1, excess_step = -1, skipped = 0, steps = 0;
  for (int i = 0; i < h.n; ++i) {
    keys.resize(static_cast<size_t>(i) + 1);
    std::iota(keys.begin(), keys.end(), 0);
    lg.resize(keys.size());
    h.view->logits(i, keys, lg);
    const auto& S = run->replay.steps[static_cast<size_t>(i)].attended;
    double mx = -INFINITY;
    for (int j : S) mx = std::max(mx, lg[static_cast<size_t>(j)]);
    if (!(mx < 700.0)) {
      ++skipped;
      continue;
    }
    for (int j : S) in[static_cast<size_t>(j)] = 1;
    double gather = 0.0, zero_filled = 0.0, magnitude = 0.0;
    for (int j : S) gather += std::exp(lg[static_cast<size_t>(j)]);
    // Rows of K outside S are zero: their logit is 0 and exp(0) = 1; the fix subtracts 1 for each.
    for (int j = 0; j <= i; ++j) {
      const double e = in[static_cast<size_t>(j)] ? std::exp(lg[static_cast<size_t>(j)]) : 1.0;
      zero_filled += e;
      magnitude += e;
    }
    const double missing = static_cast<double>(i + 1 - static_cast<int>(S.size()));
    zero_filled -= missing;
    const double err = std::fabs(zero_filled - gather) / magnitude;
    double osum = 0.0;
    for (int j : S) osum += std::exp(lg[static_cast<size_t>(j)]) / gather;
    const double serr = std::fabs(osum - 1.0);
    if (std::max(err, serr) > std::max(worst, worst_sum) || worst_step < 0) worst_step = i;
    worst = std::max(worst, err);
    worst_sum = std::max(worst_sum, serr);
    // Without the fix on o_i: o_ij = exp(0) / D_i on every evicted coordinate, so sum_j o_ij = 1 + missing / D_i.
    const double unfixed = missing / gather;
    if (unfixed > excess) {
      excess = unfixed;
      excess_step = i;
    }
    for (int j : S) in[static_cast<size_t>(j)] = 0;
    ++steps;
  }
  if (check_enabled(o, "C2")) {
    const double m = std::max(worst, worst_sum);
    auto r = head_record(h, "C2", run->name, ClaimKind::Theorem, m <= 1e-12, m, worst_step);
    r.detail = {{"normaliser_relative_error", worst},
                {"sum_o_minus_1", worst_sum},
                {"steps", steps},
                {"skipped_overflow", skipped},
                {"tolerance", 1e-12}};
    out.push_back(std::move(r));
  }
  if (check_enabled(o, "D2")) {
    auto r = head_record(h, "D2", run->name, ClaimKind::Defect, excess <= 1e-12, excess, excess_step);
    r.detail = {{"max_mass_on_evicted_coordinates", excess}};
    out.push_back(std::move(r));
  }
}

}  // namespace kvo::detail
