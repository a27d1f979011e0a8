// The policy of docs/extending.md, as the page shows it, stepped as the replay engine steps a
// policy: its cache obeys S_i ⊆ S_{i-1} ∪ {i}, holds the budget, keeps the recent window, and
// evicts the token whose largest attention is lowest.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "kvo/core/policy.hpp"

namespace {

// --8<-- [start:max-attention]
class MaxAttentionPolicy final : public kvo::NestedPolicy {
 public:
  std::string name() const override { return "max-attention"; }

 protected:
  void on_begin() override { best_.assign(static_cast<size_t>(setup().n), 0.0); }
  void on_attend(int, std::span<const int> attended, std::span<const double> probs) override {
    for (size_t t = 0; t < attended.size(); ++t) {
      double& b = best_[static_cast<size_t>(attended[t])];
      b = std::max(b, probs[t]);
    }
  }
  size_t victim(int) override { return argmin_score(best_, candidates(budget().recent)); }

 private:
  std::vector<double> best_;  // by token
};
// --8<-- [end:max-attention]

}  // namespace

TEST(ExtendingExample, MaxAttentionPolicyEvictsTheLowestPeak) {
  MaxAttentionPolicy p;
  kvo::PolicySetup setup;
  setup.n = 6;
  setup.budget = {.total = 3, .heavy = 2, .recent = 1};
  p.begin(setup);
  // Query i's attention over what it attends: token 1 gets one large share early, token 0 many
  // middling ones (which H2O's sum would keep), token 2 little.
  const std::vector<std::vector<double>> weight = {
      {1.0}, {0.1, 0.9}, {0.3, 0.6, 0.1}, {0.3, 0.1, 0.1, 0.5}, {0.3, 0.1, 0.3, 0.3}, {0.3, 0.1, 0.2, 0.2, 0.2}};
  std::vector<int> previous;
  for (int i = 0; i < setup.n; ++i) {
    const std::vector<int> attended = p.attended(i);
    std::vector<double> probs;
    for (size_t t = 0; t < attended.size(); ++t)
      probs.push_back(weight[static_cast<size_t>(i)][std::min(t, weight[static_cast<size_t>(i)].size() - 1)]);
    double sum = 0.0;
    for (double x : probs) sum += x;
    for (double& x : probs) x /= sum;
    p.observe(i, attended, probs);
    const std::vector<int>& cache = p.cache();
    EXPECT_LE(cache.size(), 3u);
    EXPECT_TRUE(std::is_sorted(cache.begin(), cache.end()));
    EXPECT_NE(std::find(cache.begin(), cache.end(), i), cache.end()) << "the recent window holds token " << i;
    for (int j : cache) {
      const bool was_held = std::find(previous.begin(), previous.end(), j) != previous.end();
      EXPECT_TRUE(j == i || was_held) << "token " << j << " came back at step " << i;
    }
    previous = cache;
  }
  // Token 1's peak (0.9 at step 1) outlasts token 0's many middling shares and token 2's little.
  EXPECT_NE(std::find(previous.begin(), previous.end(), 1), previous.end());
  EXPECT_EQ(std::find(previous.begin(), previous.end(), 2), previous.end());
  EXPECT_EQ(p.name(), "max-attention");
}
