// The streaming pass of the per-head checks against the dense computation it replaced: the
// per-step ratios rho_i = A_i(S_i) / top-k_i of every policy equal, bit for bit, the ones built
// from dense_attention() and replay()'s kept sets; the sampled checks act at the steps the runs
// really produce, also when the eviction pattern was mispredicted (a non-nested first policy).
#include "head_data.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kvo/core/synth.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::detail;

namespace {

Trace small_trace(int prompt_len) { return test::synthetic_layer(2, 1, 96, 16, prompt_len, 11); }

TraceChecksOptions options(int prompt_len) {
  TraceChecksOptions o;
  o.run.budget = Budget(Amount::parse("20%"));
  o.run.prompt_len = prompt_len;
  o.threads = 1;
  return o;
}

}  // namespace

TEST(HeadPass, RatiosEqualTheDenseComputation) {
  for (const int P : {0, 40}) {
    const Trace tr = small_trace(P);
    const TraceChecksOptions o = options(P);
    const HeadResult res = check_head(tr, 0, 1, o);
    // The reference: the n x n dense attention, A_i(j) by rows, each policy's replay.
    const Eigen::MatrixXd a = dense_attention(HeadView(tr, 0, 1));
    const int n = tr.n_tokens, k = o.run.budget.resolve(n, 0, 1).total;
    Eigen::MatrixXd acc = Eigen::MatrixXd::Zero(n, n);
    for (int i = 0; i < n; ++i) {
      if (i > 0) acc.row(i).head(i) = acc.row(i - 1).head(i);
      acc.row(i).head(i + 1) += a.row(i).head(i + 1);
    }
    const std::vector<double> opt = top_k_row_sums(acc, k);
    for (const PolicyId id : o.policies) {
      ReplayOptions ro;
      ro.run = o.run.with_policy(id);
      ro.run.seed = o.run.seed + static_cast<std::uint64_t>(tr.n_heads * 0 + 1);
      ro.run.layers = {0};
      ro.run.heads = {1};
      ro.threads = 1;
      const HeadReplay hr = replay(tr, ro).heads.front();
      const std::vector<double>& rho = res.extras.rho.at(policy_name(id));
      for (int i = std::max(k, P - 1); i < n; ++i) {
        double v = 0.0;
        for (int j : hr.steps[static_cast<size_t>(i)].kept) v += acc(i, j);
        const double want = opt[static_cast<size_t>(i)] > 0 ? v / opt[static_cast<size_t>(i)] : 1.0;
        ASSERT_EQ(rho[static_cast<size_t>(i)], want) << policy_name(id) << " P=" << P << " step " << i;
      }
    }
  }
}

TEST(HeadPass, SampledStepsAreTheRunsOwnEvenWhenMispredicted) {
  for (const auto& policies : {std::vector<PolicyId>{PolicyId::H2OPaper, PolicyId::H2O},
                               std::vector<PolicyId>{PolicyId::H2OMask, PolicyId::Tova}}) {
    TraceChecksOptions o = options(40);
    o.policies = policies;
    const Trace tr = small_trace(40);
    const HeadResult res = check_head(tr, 0, 0, o);
    const HeadInfo h = head_info(tr, 0, 0, o);
    EXPECT_EQ(res.sampled, sampled_steps(h, res.evicted, o));
    ASSERT_FALSE(res.sampled.small_ground.empty());
    // h2o-mask re-admits tokens: its evictions per step are not the nested pattern the pass
    // predicts (nothing during the prompt, the prompt cut to k, then one per step).
    std::vector<int> nested(static_cast<size_t>(h.n), 0);
    for (int i = 0, size = 0; i < h.n; ++i) {
      ++size;
      if (i < 40 - 1) continue;
      nested[static_cast<size_t>(i)] = std::max(0, size - h.k());
      size -= nested[static_cast<size_t>(i)];
    }
    const bool mask = policies.front() == PolicyId::H2OMask;
    EXPECT_EQ(res.evicted.front() != nested, mask);
    EXPECT_EQ(res.passes, mask ? 2 : 1);
    for (const auto& r : res.records)
      if (r.id == "C6" || r.id == "C7") {
        EXPECT_TRUE(std::binary_search(res.sampled.small_ground.begin(), res.sampled.small_ground.end(), r.step))
            << r.id << " " << r.variant << " at " << r.step;
      }
  }
}

// verify computes the sweep cell at the head's own budget inside the head's pass, reusing C19's
// offline solve; it must be the cell the sweep's own unit computes, bit for bit (also when C19 is
// off and the cell solves the offline problem itself).
TEST(HeadPass, SweepCellAtTheHeadsBudgetIsTheSweepsOwn) {
  const Trace tr = small_trace(0);
  for (const bool c19 : {true, false}) {
    TraceChecksOptions o = options(0);
    if (!c19) o.checks = {"C1"};
    const HeadResult res = check_head(tr, 0, 1, o, nullptr, true);
    ASSERT_TRUE(res.sweep.has_value());
    EXPECT_EQ(std::isnan(res.extras.opt_dyn), !c19);
    const SweepCell want = sweep_head(tr, 0, 1, o);
    EXPECT_EQ(res.sweep->policy, want.policy) << "C19 " << c19;
    EXPECT_EQ(res.sweep->stat, want.stat) << "C19 " << c19;
    EXPECT_EQ(res.sweep->dyn, want.dyn) << "C19 " << c19;
    EXPECT_GT(want.dyn, 0.0);
  }
  EXPECT_FALSE(check_head(tr, 0, 1, options(0)).sweep.has_value());
}
