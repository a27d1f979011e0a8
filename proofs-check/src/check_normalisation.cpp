// C2: the normaliser of Def 2.2/D.10 computed two ways (gather over S, and the zero-filled-row
// formula with the -1 fix) and sum_j o_ij = 1; D2: the mass the unfixed formula leaves on evicted
// coordinates. fp64, unshifted exponentials (steps whose logits exceed 700 are skipped).
#include <algorithm>
#include <cmath>

#include "head_data.hpp"

namespace kvo::detail {
namespace {

class NormalisationCheck final : public StepCheck {
 public:
  NormalisationCheck(const HeadInfo& h, const TraceChecksOptions& o)
      : h_(h), c2_(check_enabled(o, "C2")), d2_(check_enabled(o, "D2")) {
    run_ = h.run_index(PolicyId::H2OPaper);
    if (run_ < 0 && !h.runs.empty()) run_ = 0;
    // Dense-attention traces carry no logits.
    on_ = (c2_ || d2_) && h.view->head_dim() != 0 && run_ >= 0;
    if (on_) in_.assign(static_cast<size_t>(h.n), 0);
  }

  void step(const HeadStep& s) override {
    if (!on_) return;
    const int i = s.i;
    const auto& lg = s.logits;
    const auto& S = s.runs[static_cast<size_t>(run_)].cur->attended;
    double mx = -INFINITY;
    for (int j : S) mx = std::max(mx, lg[static_cast<size_t>(j)]);
    if (!(mx < 700.0)) {
      ++skipped_;
      return;
    }
    for (int j : S) in_[static_cast<size_t>(j)] = 1;
    double gather = 0.0, zero_filled = 0.0, magnitude = 0.0;
    for (int j : S) gather += std::exp(lg[static_cast<size_t>(j)]);
    // Rows of K outside S are zero: their logit is 0 and exp(0) = 1; the fix subtracts 1 for each.
    for (int j = 0; j <= i; ++j) {
      const double e = in_[static_cast<size_t>(j)] ? std::exp(lg[static_cast<size_t>(j)]) : 1.0;
      zero_filled += e;
      magnitude += e;
    }
    const double missing = static_cast<double>(i + 1 - static_cast<int>(S.size()));
    zero_filled -= missing;
    const double err = std::fabs(zero_filled - gather) / magnitude;
    double osum = 0.0;
    for (int j : S) osum += std::exp(lg[static_cast<size_t>(j)]) / gather;
    const double serr = std::fabs(osum - 1.0);
    if (std::max(err, serr) > std::max(worst_, worst_sum_) || worst_step_ < 0) worst_step_ = i;
    worst_ = std::max(worst_, err);
    worst_sum_ = std::max(worst_sum_, serr);
    // Without the fix on o_i: o_ij = exp(0) / D_i on every evicted coordinate, so sum_j o_ij = 1 + missing / D_i.
    const double unfixed = missing / gather;
    if (unfixed > excess_) {
      excess_ = unfixed;
      excess_step_ = i;
    }
    for (int j : S) in_[static_cast<size_t>(j)] = 0;
    ++steps_;
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    if (!on_) return;
    const std::string& name = h_.runs[static_cast<size_t>(run_)].name;
    if (c2_) {
      const double m = std::max(worst_, worst_sum_);
      auto r = head_record(h_, "C2", name, ClaimKind::Theorem, m <= 1e-12, m, worst_step_);
      r.detail = {{"normaliser_relative_error", worst_},
                  {"sum_o_minus_1", worst_sum_},
                  {"steps", steps_},
                  {"skipped_overflow", skipped_},
                  {"tolerance", 1e-12}};
      out.push_back(std::move(r));
    }
    if (d2_) {
      auto r = head_record(h_, "D2", name, ClaimKind::Defect, excess_ <= 1e-12, excess_, excess_step_);
      r.detail = {{"max_mass_on_evicted_coordinates", excess_}};
      out.push_back(std::move(r));
    }
  }

 private:
  const HeadInfo& h_;
  bool c2_, d2_, on_ = false;
  int run_ = -1;
  std::vector<char> in_;
  double worst_ = 0.0, worst_sum_ = 0.0, excess_ = 0.0;
  long worst_step_ = -1, excess_step_ = -1, skipped_ = 0, steps_ = 0;
};

}  // namespace

std::unique_ptr<StepCheck> normalisation_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<NormalisationCheck>(h, o);
}

}  // namespace kvo::detail
