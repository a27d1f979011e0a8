#include "kvo/core/shared_budget.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "kvo/core/error.hpp"

namespace kvo {

SharedBudgetGroup::SharedBudgetGroup(std::vector<EvictionPolicy*> units, int prompt_len) : prompt_len_(prompt_len) {
  require(!units.empty(), "internal: a shared budget needs at least one cache unit");
  for (EvictionPolicy* p : units) {
    auto* nested = dynamic_cast<NestedPolicy*>(p);
    require(nested != nullptr, "policy " + p->name() + " is not nested; it cannot share a budget");
    units_.push_back(nested);
    capacity_ += nested->budget().total;
  }
}

long SharedBudgetGroup::held() const {
  long s = 0;
  for (const NestedPolicy* p : units_) s += static_cast<long>(p->cache().size());
  return s;
}

std::vector<std::vector<int>> SharedBudgetGroup::settle(int i) {
  std::vector<std::vector<int>> gone(units_.size());
  if (i < prompt_len_ - 1) return gone;
  const long excess = held() - capacity_;
  if (excess <= 0) return gone;
  struct Candidate {
    double score;
    int token;
    size_t unit;
  };
  std::vector<Candidate> cand;
  for (size_t u = 0; u < units_.size(); ++u) {
    const std::vector<double> score = units_[u]->eviction_scores();
    require(!score.empty(), "policy " + units_[u]->name() + " has no per-token score; it cannot share a budget");
    for (int j : units_[u]->cache()) {
      const double s = score[static_cast<size_t>(j)];
      if (!std::isinf(s) || s < 0) cand.push_back({s, j, u});
    }
  }
  // Each unit's budget covers its own recent window, so the group always has `excess` candidates.
  require(static_cast<long>(cand.size()) >= excess, "internal: a shared budget has fewer candidates than its excess");
  const auto order = [](const Candidate& a, const Candidate& b) {
    return std::tie(a.score, a.token, a.unit) < std::tie(b.score, b.token, b.unit);
  };
  std::nth_element(cand.begin(), cand.begin() + (excess - 1), cand.end(), order);
  for (long x = 0; x < excess; ++x)
    gone[cand[static_cast<size_t>(x)].unit].push_back(cand[static_cast<size_t>(x)].token);
  for (size_t u = 0; u < units_.size(); ++u) {
    std::sort(gone[u].begin(), gone[u].end());
    units_[u]->evict(gone[u]);
  }
  return gone;
}

}  // namespace kvo
