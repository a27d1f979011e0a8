// TOVA1, the premise of TOVA's rule (arXiv 2401.06104): at every step i >= k (the cache full), the
// k tokens the current query attends most (TOVA's choice) against the k largest accumulated
// attentions A_i (H2O's), each asked how much of query i+1's attention it keeps.
#include "head_data.hpp"
#include "top_k.hpp"

namespace kvo::detail {
namespace {

class TovaPremiseCheck final : public StepCheck {
 public:
  TovaPremiseCheck(const HeadInfo& h, const TraceChecksOptions& o) : h_(h), on_(check_enabled(o, "TOVA1")) {}

  void step(const HeadStep& s) override {
    if (!on_) return;
    const int i = s.i, k = h_.k();
    if (pending_) {
      const double t = mass_of(s.a, current_), a = mass_of(s.a, accumulated_);
      tova_ += t;
      h2o_ += a;
      behind_ += t < a ? 1 : 0;
      ++rows_;
    }
    pending_ = i >= k && i + 1 < h_.n;
    if (!pending_) return;
    const auto len = static_cast<size_t>(i) + 1;
    current_ = top_k_positions(s.a.first(len), k);
    accumulated_ = top_k_positions(s.acc.first(len), k);
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    if (!on_ || rows_ == 0) return;
    const double ratio = h2o_ > 0 ? tova_ / h2o_ : 1.0;
    auto r = head_record(h_, "TOVA1", "next query", ClaimKind::Finding, ratio >= 1.0 - 1e-12, ratio);
    const double rows = static_cast<double>(rows_);
    r.detail = {{"steps", rows_},
                {"current_row_mass", tova_ / rows},
                {"accumulated_mass", h2o_ / rows},
                {"steps_behind", behind_},
                {"holds_when", "ratio >= 1"}};
    out.push_back(std::move(r));
  }

 private:
  const HeadInfo& h_;
  bool on_;
  bool pending_ = false;
  std::vector<int> current_, accumulated_;
  long rows_ = 0, behind_ = 0;
  double tova_ = 0.0, h2o_ = 0.0;
};

}  // namespace

std::unique_ptr<StepCheck> tova_premise_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<TovaPremiseCheck>(h, o);
}

}  // namespace kvo::detail
