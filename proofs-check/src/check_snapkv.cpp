// SNAP1, SnapKV's observation (arXiv 2404.14469): the last W = 32 queries before the split m (the
// prompt length, else n/2) vote, by their summed attention, for k - W keys of the prefix before
// them; every later query is asked how much of the prefix mass its own best k - W keys would hold
// that the vote holds too. Raw attention, no pooling: the observation, not SnapKV's method.
#include <algorithm>

#include "head_data.hpp"
#include "top_k.hpp"

namespace kvo::detail {
namespace {

constexpr int kObservationWindow = 32;  // SnapKV's observation window
constexpr double kVoteKeeps = 0.9;      // the vote keeps at least 90% of what the later queries' best keys keep

class SnapKvCheck final : public StepCheck {
 public:
  SnapKvCheck(const HeadInfo& h, const TraceChecksOptions& o) : h_(h), on_(check_enabled(o, "SNAP1")) {
    const PromptSplit split = prompt_split(h, kObservationWindow);
    m_ = split.m;
    w_ = split.window;
    prefix_ = m_ - w_;
    kept_ = std::min(std::max(1, h.k() - w_), prefix_);
    // Nothing to predict when the vote keeps the whole prefix or no query comes after the split.
    on_ = on_ && w_ >= 1 && kept_ < prefix_ && m_ < h.n;
    if (on_) votes_.assign(static_cast<size_t>(prefix_), 0.0);
  }

  void step(const HeadStep& s) override {
    if (!on_) return;
    const int i = s.i;
    const auto prefix = s.a.first(static_cast<size_t>(prefix_));
    if (i >= m_ - w_ && i < m_)
      for (int j = 0; j < prefix_; ++j) votes_[static_cast<size_t>(j)] += prefix[static_cast<size_t>(j)];
    if (i == m_ - 1) {
      chosen_ = top_k_positions(votes_, kept_);
      mask_.assign(static_cast<size_t>(prefix_), 0);
      for (int j : chosen_) mask_[static_cast<size_t>(j)] = 1;
    }
    if (i < m_) return;
    const std::vector<int> best = top_k_positions(prefix, kept_);
    const double best_mass = mass_of(prefix, best), vote_mass = mass_of(prefix, chosen_);
    double all = 0.0;
    for (double x : prefix) all += x;
    long hits = 0;
    for (int j : best) hits += mask_[static_cast<size_t>(j)];
    best_ += best_mass;
    vote_ += vote_mass;
    random_ += all * kept_ / prefix_;  // what k - W keys drawn at random hold, in expectation
    hit_rate_ += static_cast<double>(hits) / kept_;
    ++rows_;
  }

  void finish(const HeadSeries&, std::vector<CheckRecord>& out, HeadExtras&) override {
    if (!on_ || rows_ == 0) return;
    const double share = best_ > 0 ? vote_ / best_ : 1.0;
    auto r = head_record(h_, "SNAP1", "window " + std::to_string(w_), ClaimKind::Finding, share >= kVoteKeeps, share);
    r.detail = {{"split", m_},
                {"window", w_},
                {"kept_from_prefix", kept_},
                {"prefix", prefix_},
                {"later_queries", rows_},
                {"hit_rate", hit_rate_ / static_cast<double>(rows_)},
                {"random_share", best_ > 0 ? random_ / best_ : 1.0},
                {"holds_when", "share >= 0.9"}};
    out.push_back(std::move(r));
  }

 private:
  const HeadInfo& h_;
  bool on_;
  int m_ = 0, w_ = 0, prefix_ = 0, kept_ = 0;
  std::vector<double> votes_;
  std::vector<int> chosen_;
  std::vector<char> mask_;
  long rows_ = 0;
  double best_ = 0.0, vote_ = 0.0, random_ = 0.0, hit_rate_ = 0.0;
};

}  // namespace

std::unique_ptr<StepCheck> snapkv_check(const HeadInfo& h, const TraceChecksOptions& o) {
  return std::make_unique<SnapKvCheck>(h, o);
}

}  // namespace kvo::detail
