// SCIS1, Scissorhands' persistence of importance (arXiv 2305.17118): a token is pivotal at step i
// when a(i, j) >= 1/(i+1) (more than a uniform row gives it). Over the old tokens j < m - W (m the
// prompt length, else n/2; W = 32), E holds those pivotal at some step of [m - W, m) and L those
// pivotal at some step from m on; the persistence ratio is |L ∩ E| / |L|.
#include <algorithm>

#include "head_data.hpp"

namespace kvo::detail {
namespace {

constexpr int kPivotalWindow = 32;  // the earlier steps whose pivotal tokens are remembered
constexpr double kPersists = 0.95;  // Scissorhands' persistence ratio "over 95%"

class PersistenceCheck final : public StepCheck {
 public:
  PersistenceCheck(const HeadInfo& h, const TraceChecksOptions& o) : h_(h), on_(check_enabled(o, "SCIS1")) {
    const PromptSplit split = prompt_split(h, kPivotalWindow);
    m_ = split.m;
    w_ = split.window;
    old_ = m_ - w_;
    on_ = on_ && w_ >= 1 && old_ >= 1 && m_ < h.n;
    if (on_) early_.assign(static_cast<size_t>(old_), 0), later_ = early_;
  }

  void step(const HeadStep& s) override {
    if (!on_ || s.i < m_ - w_) return;
    std::vector<char>& mark = s.i < m_ ? early_ : later_;
    const double uniform = 1.0 / (s.i + 1);
    for (int j = 0; j < old_; ++j)
      if (s.a[static_cast<size_t>(j)] >= uniform) mark[static_cast<size_t>(j)] = 1;
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    if (!on_) return;
    long e = 0, l = 0, both = 0;
    for (size_t j = 0; j < early_.size(); ++j) {
      e += early_[j];
      l += later_[j];
      both += early_[j] & later_[j];
    }
    const double ratio = l > 0 ? static_cast<double>(both) / static_cast<double>(l) : 1.0;
    auto r = head_record(h_, "SCIS1", "pivotal: a >= 1/(i+1)", ClaimKind::Finding, ratio >= kPersists, ratio);
    r.detail = {{"split", m_},
                {"window", w_},
                {"old_tokens", old_},
                {"pivotal_before", e},
                {"pivotal_later", l},
                {"pivotal_both", both},
                {"random_ratio", static_cast<double>(e) / old_},  // E drawn at random among the old tokens
                {"holds_when", "ratio >= 0.95"}};
    out.push_back(std::move(r));
  }

 private:
  const HeadInfo& h_;
  bool on_;
  int m_ = 0, w_ = 0, old_ = 0;
  std::vector<char> early_, later_;
};

}  // namespace

std::unique_ptr<StepCheck> persistence_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<PersistenceCheck>(h, o);
}

}  // namespace kvo::detail
