// SINK1, StreamingLLM's attention sinks (arXiv 2309.17453): at every step whose cache is full
// (i >= k), the attention mass a window of the last k tokens keeps, against the 4 initial tokens
// plus the last k - 4. The record is the share of the window's lost mass the sinks recover.
#include "head_data.hpp"

namespace kvo::detail {
namespace {

constexpr int kSinks = 4;         // StreamingLLM's four initial tokens
constexpr double kLargely = 0.5;  // "largely recover": at least half of what the window loses

class SinksCheck final : public StepCheck {
 public:
  SinksCheck(const HeadInfo& h, const TraceChecksOptions& o) : h_(h), on_(check_enabled(o, "SINK1")) {}

  void step(const HeadStep& s) override {
    const int i = s.i, k = h_.k();
    if (!on_ || k <= kSinks || i < k) return;
    double window = 0.0, recent = 0.0, sinks = 0.0;
    for (int j = i - k + 1; j <= i; ++j) window += s.a[static_cast<size_t>(j)];
    for (int j = i - (k - kSinks) + 1; j <= i; ++j) recent += s.a[static_cast<size_t>(j)];
    for (int j = 0; j < kSinks; ++j) sinks += s.a[static_cast<size_t>(j)];
    lost_ += 1.0 - window;
    recovered_ += sinks + recent - window;
    sink_mass_ += sinks;
    uniform_ += static_cast<double>(kSinks) / (i + 1);
    ++rows_;
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    if (!on_ || rows_ == 0) return;  // the cache never fills: nothing is evicted
    const double share = lost_ > 0 ? recovered_ / lost_ : 1.0;
    auto r = head_record(h_, "SINK1", "4 sinks + window", ClaimKind::Finding, share >= kLargely, share);
    const double rows = static_cast<double>(rows_);
    r.detail = {{"steps", rows_},
                {"sink_mass", sink_mass_ / rows},
                {"uniform_share", uniform_ / rows},
                {"window_lost_mass", lost_ / rows},
                {"recovered_mass", recovered_ / rows},
                {"holds_when", "share >= 0.5"}};
    out.push_back(std::move(r));
  }

 private:
  const HeadInfo& h_;
  bool on_;
  long rows_ = 0;
  double lost_ = 0.0, recovered_ = 0.0, sink_mass_ = 0.0, uniform_ = 0.0;
};

}  // namespace

std::unique_ptr<StepCheck> sinks_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<SinksCheck>(h, o);
}

}  // namespace kvo::detail
