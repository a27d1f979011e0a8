// Every theorem check can fail: for each claim C1-C27 an input on which the check must report a
// failure (a corrupted cache or score, a non-submodular function, a wrong certificate, a perturbed
// gradient, ...), asserting the claim id, the variant and where (layer, head, step). The claim
// catalogue names these tests; ClaimCatalogue.NamesItsFunctionDocAndTests keeps them in step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "claim_sink.hpp"
#include "head_data.hpp"
#include "kvo/core/policy_registry.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "kvo/proofs_check/paper_experiments.hpp"
#include "kvo/proofs_check/softmax_loss.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::detail;

namespace {

constexpr int kLayer = 0, kHead = 1;

TraceChecksOptions small_check_options() {
  TraceChecksOptions o;
  o.run.budget = Budget(Amount::parse("25%"));
  o.run.prompt_len = 0;
  o.threads = 1;
  return o;
}

// One head of a small synthetic trace (n = 64, k = 16, no prefill), every checked policy
// replayed. `base` is the untouched pass; records(tamper) runs the checks with a step edited.
struct Head {
  Trace trace;
  TraceChecksOptions o;
  HeadInfo h;
  HeadResult base;
  explicit Head(Trace t, std::vector<PolicyId> policies = default_policies(PolicyListUse::Checks))
      : trace(std::move(t)) {
    o = small_check_options();
    o.policies = std::move(policies);
    h = head_info(trace, kLayer, kHead, o);
    base = check_head(trace, kLayer, kHead, o);
  }
  int idx(PolicyId id) const {
    const int r = h.run_index(id);
    if (r < 0) throw std::runtime_error("policy not replayed");
    return r;
  }
  const std::vector<int>& evicted(PolicyId id) const { return base.evicted[static_cast<size_t>(idx(id))]; }
  int first_eviction(PolicyId id) const {
    const auto& e = evicted(id);
    for (size_t i = 0; i < e.size(); ++i)
      if (e[i] > 0) return static_cast<int>(i);
    return -1;
  }
  // The first step at or after `from` at which the run evicted exactly one token.
  int single_eviction_after(PolicyId id, int from) const {
    const auto& e = evicted(id);
    for (int i = from; i < static_cast<int>(e.size()); ++i)
      if (e[static_cast<size_t>(i)] == 1) return i;
    throw std::runtime_error("no single eviction");
  }
  // The checks `ids` (all when empty) with `tamper` editing the steps.
  std::vector<CheckRecord> records(const Tamper& tamper, std::set<std::string> ids = {}) {
    TraceChecksOptions oo = o;
    oo.checks = std::move(ids);
    return check_head(trace, kLayer, kHead, oo, tamper).records;
  }
  // Dense attention and A_i(j) of the head.
  Eigen::MatrixXd dense() const { return dense_attention(*h.view); }
  Eigen::MatrixXd accumulated() const {
    const Eigen::MatrixXd a = dense();
    Eigen::MatrixXd acc = Eigen::MatrixXd::Zero(a.rows(), a.cols());
    for (int i = 0; i < a.rows(); ++i) {
      if (i > 0) acc.row(i).head(i) = acc.row(i - 1).head(i);
      acc.row(i).head(i + 1) += a.row(i).head(i + 1);
    }
    return acc;
  }
};

Trace synthetic_trace() { return test::synthetic_layer(2, 1, 64, 12, 16, 5); }

const CheckRecord& record(const std::vector<CheckRecord>& out, const std::string& id, const std::string& variant) {
  for (const auto& r : out)
    if (r.id == id && r.variant == variant) return r;
  throw std::runtime_error("no record " + id + " " + variant);
}

// The record fails at (kLayer, kHead) and, when step >= 0, at that step.
void expect_failure(const CheckRecord& r, long step) {
  EXPECT_FALSE(r.holds) << r.id << " " << r.variant << " " << r.detail.dump();
  EXPECT_EQ(r.layer, kLayer);
  EXPECT_EQ(r.head, kHead);
  if (step >= 0) {
    EXPECT_EQ(r.step, step) << r.id << " " << r.variant;
  }
}

void expect_holds(const std::vector<CheckRecord>& out, const std::string& id, const std::string& variant) {
  const CheckRecord& r = record(out, id, variant);
  EXPECT_TRUE(r.holds) << r.id << " " << r.variant << " " << r.detail.dump();
}

// Greedy on the columns of w (evict the argmin of w(i, j) over S_{i-1} ∪ {i}, oldest on ties)
// until `wrong_from`, then the argmax: a trajectory that stops being greedy for f~ = w there
// (-1: never). Probabilities are zero.
std::vector<StepRecord> greedy_trajectory(const Eigen::MatrixXd& w, int k, int wrong_from) {
  std::vector<StepRecord> steps(static_cast<size_t>(w.rows()));
  std::vector<int> cache;
  for (int i = 0; i < w.rows(); ++i) {
    StepRecord& s = steps[static_cast<size_t>(i)];
    cache.push_back(i);
    s.attended = cache;
    s.probs.assign(cache.size(), 0.0);
    if (static_cast<int>(cache.size()) > k) {
      size_t pick = 0;
      for (size_t t = 1; t < cache.size(); ++t) {
        const double a = w(i, cache[t]), b = w(i, cache[pick]);
        if (wrong_from >= 0 && i >= wrong_from ? a > b : a < b) pick = t;
      }
      s.evicted = {cache[pick]};
      cache.erase(cache.begin() + static_cast<long>(pick));
    }
    s.kept = cache;
  }
  return steps;
}

// f(S) = [0 in S] + 3 [{3, 4, 5} ⊆ S] on {0..5}: monotone, not submodular. Greedy with k = 3 takes
// 0, then 1 and 2 (all gains 0, smallest index), reaching 1 where the optimum {3, 4, 5} has 3.
class Complements final : public SetFunction {
 public:
  int ground_size() const override { return 6; }
  SetFnTraits traits() const override { return {"complements", true, false}; }
  struct M : Memo {
    std::unique_ptr<Memo> clone() const override { return std::make_unique<M>(*this); }
  };
  std::unique_ptr<Memo> empty_memo() const override { return std::make_unique<M>(); }
  double gain(const Memo& m, int j) const override {
    std::vector<int> s = m.members;
    const double before = of(s);
    s.push_back(j);
    return of(s) - before;
  }
  void add(Memo& m, int j) const override { m.members.push_back(j); }
  double value(const Memo& m) const override { return of(m.members); }

 private:
  static double of(const std::vector<int>& s) {
    auto has = [&](int x) { return std::find(s.begin(), s.end(), x) != s.end(); };
    return (has(0) ? 1.0 : 0.0) + (has(3) && has(4) && has(5) ? 3.0 : 0.0);
  }
};

std::vector<CheckRecord> static_objective_records(const SetFunction& f, int k, long step) {
  const TraceChecksOptions o = small_check_options();
  HeadInfo h;
  h.layer = kLayer;
  h.head = kHead;
  ClaimSink sink;
  check_static_objective(f, "FL", k, step, o, sink);
  std::vector<CheckRecord> out;
  sink.flush(h, out);
  return out;
}

}  // namespace

TEST(ClaimCanFail, C1_ReadmittedToken) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2O), first = t.first_eviction(PolicyId::H2O), at = first + 3;
  ASSERT_GE(first, 0);
  int gone = -1;
  const auto out = t.records([&](StepEdit& e) {
    if (e.i == first) gone = e.cur[r].evicted.front();
    if (e.i != at) return;
    std::vector<int>& kept = e.cur[r].kept;
    kept.insert(std::lower_bound(kept.begin(), kept.end(), gone), gone);
  });
  const CheckRecord& rec = record(out, "C1", policy_name(PolicyId::H2O));
  EXPECT_EQ(rec.kind, ClaimKind::Theorem);
  expect_failure(rec, at);
  EXPECT_GE(rec.detail["re_entries"].get<long>(), 1);
  expect_holds(out, "C1", policy_name(PolicyId::Tova));
}

TEST(ClaimCanFail, C2_TokenAttendedTwice) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2OPaper), at = t.single_eviction_after(PolicyId::H2OPaper, 20);
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i != at) return;
        std::vector<int>& att = e.cur[r].attended;
        att.push_back(att.front());
      },
      {"C2"});
  expect_failure(record(out, "C2", policy_name(PolicyId::H2OPaper)), at);
}

TEST(ClaimCanFail, C3_EvictedTokenIsNotTheArgmin) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2OPaper), at = t.single_eviction_after(PolicyId::H2OPaper, 30);
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i != at) return;
        const StepRecord& s = e.cur[r];
        auto& sc = e.scores[r];
        double top = 0.0;
        for (int j : s.attended) top = std::max(top, sc[j]);
        sc[s.evicted.front()] = top + 1.0;
      },
      {"C3"});
  for (const char* h : {"h=id", "h=sqrt", "h=log"}) expect_failure(record(out, "C3", h), at);
}

TEST(ClaimCanFail, C4_ScoreDriftsFromRecomputation) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2OPaper), at = t.single_eviction_after(PolicyId::H2OPaper, 30);
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i == at) e.scores[r][e.cur[r].kept.front()] *= 1.0 + 1e-6;
      },
      {"C4"});
  expect_failure(record(out, "C4", policy_name(PolicyId::H2OPaper)), at);
}

TEST(ClaimCanFail, C5_C12_NegativeScoreBreaksMonotonicity) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2OPaper);
  ASSERT_FALSE(t.base.sampled.scores.empty());
  const int at = t.base.sampled.scores.front();
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i != at) return;
        auto& sc = e.scores[r];
        sc[e.cur[r].attended.front()] = -100.0 * *std::max_element(sc.begin(), sc.end());
      },
      {"C5", "C12"});
  expect_failure(record(out, "C5", "C[id]"), at);
  expect_failure(record(out, "C12", "C[id]"), at);
  expect_holds(out, "C12", "A[id]");
}

TEST(ClaimCanFail, C6_MixedSignWeightsBreakDiminishingReturns) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2OPaper);
  ASSERT_FALSE(t.base.sampled.small_ground.empty());
  const int at = t.base.sampled.small_ground.front();
  std::vector<int> Z;
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i == at - 1) Z = e.cur[r].kept;
        if (e.i != at) return;
        int flip = 0;
        for (int j = 0; j <= at; ++j)  // every other token outside Z gets a negative weight
          if (!std::binary_search(Z.begin(), Z.end(), j) && flip++ % 2 == 0) e.scores[r][j] = -0.5;
      },
      {"C6"});
  expect_failure(record(out, "C6", "C[sqrt]"), at);
  expect_holds(out, "C6", "A[sqrt]");
}

TEST(ClaimCanFail, C7_C8_C16_C20_C21_C22_NonSubmodularObjective) {
  const Complements f;
  const auto out = static_objective_records(f, 3, 7);
  for (const char* id : {"C7", "C16", "C20", "C22"}) {
    const CheckRecord& r = record(out, id, "FL");
    EXPECT_EQ(r.kind, ClaimKind::Theorem);
    expect_failure(r, 7);
  }
  expect_failure(record(out, "C8", "FL random"), 7);
  expect_failure(record(out, "C8", "FL adversarial"), 7);
  expect_failure(record(out, "C21", "FL (submodular: gamma >= 1)"), 7);
  EXPECT_NEAR(record(out, "C7", "FL").metric, 1.0 / 3.0, 1e-12);
}

TEST(ClaimCanFail, C7_SubmodularObjectivePasses) {
  std::mt19937_64 g(3);
  const auto f = test::random_function(test::Family::FacilityLocation, 8, g);
  for (const auto& r : static_objective_records(*f, 3, 7))
    if (r.kind == ClaimKind::Theorem) {
      EXPECT_TRUE(r.holds) << r.id << " " << r.variant;
    }
}

TEST(ClaimCanFail, C9_EvictionFarFromTheOptimum) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2OPaper), at = t.single_eviction_after(PolicyId::H2OPaper, 30);
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i != at) return;
        // f~ = f on this step (no perturbation to hide behind), and the evicted token the heaviest.
        const StepRecord& s = e.cur[r];
        double total = 0.0;
        for (int j : s.attended) total += e.acc[j];
        for (int j : s.attended) e.scores[r][j] = e.acc[j];
        e.acc[s.evicted.front()] = e.scores[r][s.evicted.front()] = 10.0 * total;
      },
      {"C9"});
  expect_failure(record(out, "C9", "f=A f~=C"), at);
}

TEST(ClaimCanFail, C10_AccumulatedScoreDecreases) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2OPaper), at = 40;
  std::vector<int> prev;
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i == at - 1) prev = e.cur[r].kept;
        if (e.i == at)
          for (int j : prev) e.acc[j] *= 0.5;
      },
      {"C10"});
  const CheckRecord& rec = record(out, "C10", "A[id]");
  EXPECT_EQ(rec.kind, ClaimKind::Theorem);
  expect_failure(rec, at);
  expect_holds(out, "C10", "C[id]");
}

TEST(ClaimCanFail, C11_OptimumJumps) {
  Head t(synthetic_trace());
  const int at = 40;
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i == at + 1)
          for (double& x : e.acc) x *= 3.0;
      },
      {"C11"});
  expect_failure(record(out, "C11", "A[id] gamma^proof <= 1/(k+1)"), at);
  expect_failure(record(out, "C11", "A[id]"), at);
}

TEST(ClaimCanFail, C13_EvictionLowersTheValue) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2OPaper);
  std::vector<int> victim(static_cast<size_t>(t.h.n), -1);
  t.records([&](StepEdit& e) {
    if (!e.cur[r].evicted.empty()) victim[static_cast<size_t>(e.i)] = e.cur[r].evicted.front();
  });
  int at = t.single_eviction_after(PolicyId::H2OPaper, 40);
  while (victim[static_cast<size_t>(at)] == at) at = t.single_eviction_after(PolicyId::H2OPaper, at + 1);
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i == at) e.scores[r][victim[static_cast<size_t>(at)]] += 100.0;  // it was in S_{i-1}
      },
      {"C13"});
  const CheckRecord& rec = record(out, "C13", "h2o-paper C[id]");
  EXPECT_EQ(rec.kind, ClaimKind::Theorem);
  expect_failure(rec, at);
  EXPECT_GE(rec.detail["link_a_failures"].get<long>(), 1);
}

TEST(ClaimCanFail, C14_DecisionsStopBeingGreedy) {
  // f~ = f = A, so eps+ = eps- = 0 and the two-sided bound is the bare induction; the trajectory is
  // greedy on A until step 40, then evicts the heaviest token at every step.
  const int wrong = 40;
  for (const int bad : {-1, wrong}) {
    Head t(synthetic_trace(), {PolicyId::H2OPaper});
    const Eigen::MatrixXd acc = t.accumulated();
    const std::vector<StepRecord> traj = greedy_trajectory(acc, t.h.k(), bad);
    const auto out = t.records(
        [&](StepEdit& e) {
          e.cur[0] = traj[static_cast<size_t>(e.i)];
          for (size_t j = 0; j < e.scores[0].size(); ++j) e.scores[0][j] = acc(e.i, static_cast<long>(j));
        },
        {"C14"});
    if (bad < 0) {
      expect_holds(out, "C14", "f=A f~=C (h2o-paper)");
    } else {
      const CheckRecord& r = record(out, "C14", "f=A f~=C (h2o-paper)");
      expect_failure(r, -1);
      EXPECT_GE(r.step, wrong);  // the first step below the bound comes after the first wrong decision
      EXPECT_LT(r.step, t.h.n);
      EXPECT_EQ(r.detail["eps_plus"].get<double>(), 0.0);
    }
  }
}

TEST(ClaimCanFail, C15_CacheOfTheLightestTokens) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2O), at = 50, k = t.h.k();
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i != at) return;
        std::vector<int> order(static_cast<size_t>(at) + 1);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return e.acc[a] < e.acc[b]; });
        std::vector<int> lightest(order.begin(), order.begin() + k);
        std::sort(lightest.begin(), lightest.end());
        e.cur[r].kept = lightest;
      },
      {"C15"});
  const CheckRecord& rec = record(out, "C15", policy_name(PolicyId::H2O));
  EXPECT_EQ(rec.kind, ClaimKind::Finding);
  expect_failure(rec, at);
  EXPECT_GT(rec.metric, 0.0);  // alpha_hat
}

TEST(ClaimCanFail, C17_UniformAttentionIsNotSparse) {
  Trace tr = synthetic_trace();
  std::fill(tr.q[0].begin(), tr.q[0].end(), 0.0f);  // every logit 0: uniform attention
  Head t(std::move(tr), {PolicyId::H2O});
  const CheckRecord& r = record(t.base.records, "C17", "sparsity and goodness");
  expect_failure(r, -1);
  EXPECT_EQ(r.metric, 0.0);
}

TEST(ClaimCanFail, C18_AttentionRowNotADistribution) {
  Head t(synthetic_trace());
  const int at = 45;
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i == at)
          for (double& x : e.a) x *= 2.0;
      },
      {"C18"});
  expect_failure(record(out, "C18", policy_name(PolicyId::H2O)), at);
}

TEST(ClaimCanFail, C19_WrongCertificate) {
  Head t(synthetic_trace());
  OfflineProblem p;
  p.w = t.dense();
  p.budget = t.h.k();
  OfflineSolution opt = solve_offline(p);
  std::fill(opt.price.begin(), opt.price.end(), 0.0);  // prices of nothing: the dual bound opens
  std::vector<CheckRecord> out;
  check_offline_solution(t.h, DenseWeightRows(p.w), p.budget, opt, {}, t.o, out);
  const CheckRecord& r = record(out, "C19", "retained mass");
  expect_failure(r, -1);
  EXPECT_NE(r.detail["violations"].dump().find("certificate gap"), std::string::npos);
}

TEST(ClaimCanFail, C19_NestedPolicyThatReadmits) {
  Head t(synthetic_trace());
  OfflineProblem p;
  p.w = t.dense();
  p.budget = t.h.k();
  // Flagged nested, but each cache is that step's top-k: tokens come back, and the value exceeds OPT_dyn.
  ScheduleRun cheat{"cheat", true, {}, {}};
  for (int i = 0; i < t.h.n; ++i) {
    std::vector<int> order(static_cast<size_t>(i) + 1);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p.w(i, a) > p.w(i, b); });
    order.resize(std::min<size_t>(order.size(), static_cast<size_t>(p.budget)));
    std::sort(order.begin(), order.end());
    cheat.kept.push_back(order);
  }
  std::vector<CheckRecord> out;
  check_offline_solution(t.h, DenseWeightRows(p.w), p.budget, solve_offline(p), {cheat}, t.o, out);
  const CheckRecord& r = record(out, "C19", "retained mass");
  expect_failure(r, -1);
  EXPECT_NE(r.detail["violations"].dump().find("cheat beats OPT_dyn"), std::string::npos);
}

TEST(ClaimCanFail, C23_PerturbedGradient) {
  const LossInstance in = random_loss_instance(24, 6, 1.0, 1.0, 20.0, 4);
  LossDerivatives d = LossDerivatives::of(in.loss);
  d.grad = [&](const Eigen::VectorXd& x) { return Eigen::VectorXd(in.loss.grad(x) * (1.0 + 1e-3)); };
  const auto out = check_loss_formulas(in, "t", d);
  EXPECT_FALSE(record(out, "C23", "t").holds);
  EXPECT_TRUE(record(check_loss_formulas(in, "t"), "C23", "t").holds);
}

TEST(ClaimCanFail, C24_WeightsBelowTheHypothesis) {
  const LossInstance probe = random_loss_instance(24, 6, 1.0, 1.0, 20.0, 4);
  const double l = 1000.0, sigma = probe.sigma_min;
  // w^2 = 0.01 l / sigma_min^2: far below 20 + l / sigma_min^2, and lambda_min falls below l.
  const auto out = check_hessian_pd(probe.loss.A, 1.0, l, 4, "t", -0.99 * l / (sigma * sigma));
  EXPECT_FALSE(record(out, "C24", "t part 1").holds);
  EXPECT_TRUE(record(check_hessian_pd(probe.loss.A, 1.0, l, 4, "t"), "C24", "t part 1").holds);
}

TEST(ClaimCanFail, C25_RadiusUnderstated) {
  LossInstance in = random_loss_instance(24, 6, 1.0, 1.0, 20.0, 4);
  EXPECT_TRUE(record(check_lipschitz(in, 16, 4, "t"), "C25", "t").holds);
  in.R = 0.01;  // |A| = 1: the bounds assume 0.01
  const CheckRecord r = record(check_lipschitz(in, 16, 4, "t"), "C25", "t");
  EXPECT_FALSE(r.holds);
  EXPECT_GT(r.metric, 0.0);
}

TEST(ClaimCanFail, C26_WrongHessianSlowsNewton) {
  const LossInstance in = random_loss_instance(24, 6, 1.0, 1.0, 200.0 * std::exp(1.0), 4);
  LossDerivatives d = LossDerivatives::of(in.loss);
  d.hessian = [&](const Eigen::VectorXd& x) { return Eigen::MatrixXd(10.0 * in.loss.hessian(x)); };
  EXPECT_FALSE(record(check_newton(in, 2, 4, "t", d), "C26", "t").holds);
  EXPECT_TRUE(record(check_newton(in, 2, 4, "t"), "C26", "t").holds);
}

TEST(ClaimCanFail, C27_CacheOneShort) {
  Head t(synthetic_trace());
  const int r = t.idx(PolicyId::H2O), at = 50;
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i == at) e.cur[r].kept.pop_back();
      },
      {"C27"});
  const CheckRecord& rec = record(out, "C27", policy_name(PolicyId::H2O));
  expect_failure(rec, at);
  EXPECT_EQ(rec.detail["size"].get<long>(), 1);
}

TEST(ClaimCanFail, UncorruptedHeadHoldsEveryTheorem) {
  Head t(synthetic_trace());
  EXPECT_GT(t.base.records.size(), 50u);
  for (const auto& r : t.base.records)
    if (r.kind == ClaimKind::Theorem) {
      EXPECT_TRUE(r.holds) << r.id << " " << r.variant << " " << r.detail.dump();
    }
}

// E1-E3 are findings: each must be able to report that the paper's statement does not hold.

TEST(ClaimCanFail, E1_UniformAttentionIsNotSparse) {
  Trace tr = synthetic_trace();
  std::fill(tr.q[0].begin(), tr.q[0].end(), 0.0f);  // every logit 0: uniform attention
  Head t(std::move(tr), {PolicyId::H2O});
  const CheckRecord& r = record(t.base.records, "E1", "attention rows");
  expect_failure(r, -1);
  EXPECT_EQ(r.metric, 0.0);
  EXPECT_EQ(r.kind, ClaimKind::Finding);
}

// A purely local head: every query spreads its attention evenly over its last 8 keys, so every
// token but the first and last few accumulates exactly 1. A point mass is no power law.
TEST(ClaimCanFail, E2_ALocalHeadIsNotAPowerLaw) {
  Head t(synthetic_trace(), {PolicyId::H2O});
  const int n = t.trace.n_tokens, w = 8;
  std::vector<double> local(static_cast<size_t>(n), 0.0);
  for (int i = 0; i < n; ++i) {
    const int from = std::max(0, i - w + 1);
    for (int j = from; j <= i; ++j) local[static_cast<size_t>(j)] += 1.0 / (i - from + 1);
  }
  const auto out = t.records(
      [&](StepEdit& e) {
        if (e.i == n - 1) e.acc = local;
      },
      {"E2"});
  const CheckRecord& r = record(out, "E2", "accumulated attention");
  expect_failure(r, -1);
  EXPECT_EQ(r.detail["verdict"].get<std::string>(), "rejected (p < 0.1)") << r.detail.dump();
  EXPECT_LT(r.metric, 0.1);
  // The head's own accumulated attention is reported, whatever the verdict.
  EXPECT_EQ(record(t.base.records, "E2", "accumulated attention").detail["n"].get<int>(), n);
}

namespace {

// Test-local count of the distinct other words within `window` tokens of any occurrence.
std::map<std::int32_t, double> distinct_neighbours(const std::vector<std::int32_t>& tokens, int window) {
  std::map<std::int32_t, std::set<std::int32_t>> s;
  const int n = static_cast<int>(tokens.size());
  for (int j = 0; j < n; ++j)
    for (int i = std::max(0, j - window); i <= std::min(n - 1, j + window); ++i)
      if (tokens[static_cast<size_t>(i)] != tokens[static_cast<size_t>(j)])
        s[tokens[static_cast<size_t>(j)]].insert(tokens[static_cast<size_t>(i)]);
  std::map<std::int32_t, double> out;
  for (const auto& [w, v] : s) out[w] = static_cast<double>(v.size());
  return out;
}

}  // namespace

// Words of uneven frequencies. When every word receives in all exactly its co-occurrence count, rho
// given frequency is 1; when attention follows the position only, the correlation is weak.
TEST(ClaimCanFail, E3_AttentionThatIgnoresCooccurrence) {
  Trace tr = synthetic_trace();
  const int n = tr.n_tokens;
  tr.tokens.resize(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) tr.tokens[static_cast<size_t>(j)] = (j * j + 3 * j + j / 7) % 17;
  tr.metadata = {{"text_source", "words of 17 ids"}};  // no longer a synthetic trace's random ids
  std::map<std::int32_t, double> freq;
  for (auto t : tr.tokens) freq[t] += 1.0;
  const auto count = distinct_neighbours(tr.tokens, 4);
  Head t(std::move(tr), {PolicyId::H2O});
  t.o.cooccurrence_window = 4;
  auto with_final_acc = [&](const std::function<double(int)>& value) {
    return t.records(
        [&](StepEdit& e) {
          if (e.i == n - 1)
            for (int j = 0; j < n; ++j) e.acc[static_cast<size_t>(j)] = value(j);
        },
        {"E3"});
  };
  const auto& tokens = t.trace.tokens;
  std::set<std::int32_t> seen;  // each word's count on its first occurrence, 0 on the others
  std::vector<double> first_gets_count(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) {
    const auto w = tokens[static_cast<size_t>(j)];
    first_gets_count[static_cast<size_t>(j)] = seen.insert(w).second ? count.at(w) : 0.0;
  }
  const auto follows = with_final_acc([&](int j) { return first_gets_count[static_cast<size_t>(j)]; });
  const CheckRecord& good = record(follows, "E3", "words");
  EXPECT_TRUE(good.holds) << good.detail.dump();
  EXPECT_NEAR(good.metric, 1.0, 1e-12);
  const auto ignores = with_final_acc([&](int j) { return 1.0 + ((j * 37) % n) / static_cast<double>(n); });
  const CheckRecord& bad = record(ignores, "E3", "words");
  expect_failure(bad, -1);
  EXPECT_LT(bad.metric, 0.5) << bad.detail.dump();
  EXPECT_EQ(bad.detail["words"].get<size_t>(), freq.size());
}

// E4, E5, E6, E9 judge a closed loop's rows (paper_experiments.hpp). Each is fed measurements on
// which the paper's statement does not hold, beside the same rows where it does.
namespace {

LoopMeasurements perplexities(std::vector<LoopRow> rows) {
  LoopMeasurements m;
  m.full = 20.0;
  m.rows = std::move(rows);
  return m;
}

const CheckRecord& only(const std::vector<CheckRecord>& rs, const std::string& id, const std::string& variant) {
  const auto it =
      std::find_if(rs.begin(), rs.end(), [&](const CheckRecord& r) { return r.id == id && r.variant == variant; });
  EXPECT_NE(it, rs.end()) << id << " " << variant;
  EXPECT_EQ(
      std::count_if(rs.begin(), rs.end(), [&](const CheckRecord& r) { return r.id == id && r.variant == variant; }), 1);
  return *it;
}

}  // namespace

TEST(ClaimCanFail, E4_MaskingHeavyHittersNoWorseThanRandom) {
  // Masking the heavy hitters (anti-h2o) costs 6% of perplexity, random masking 4%: no drastic drop.
  const auto fails = paper_experiment_records(
      perplexities({{policy_name(PolicyId::AntiH2O), 0.9, 21.2}, {policy_name(PolicyId::Random), 0.9, 20.8}}));
  const auto& r = only(fails, "E4", "perplexity");
  EXPECT_FALSE(r.holds);
  EXPECT_NEAR(r.metric, 0.02, 1e-12);
  EXPECT_TRUE(only(paper_experiment_records(perplexities(
                       {{policy_name(PolicyId::AntiH2O), 0.9, 40.0}, {policy_name(PolicyId::Random), 0.9, 20.8}})),
                   "E4", "perplexity")
                  .holds);
}

TEST(ClaimCanFail, E5_LookAheadFarBetterThanLocal) {
  LoopMeasurements m;
  m.metric = LoopMetric::Accuracy;
  m.full = 0.8;
  m.rows = {{policy_name(PolicyId::H2O), 0.2, 0.3}, {policy_name(PolicyId::Lookahead), 0.2, 0.7}};
  const auto rs = paper_experiment_records(m);
  const auto& r = only(rs, "E5", "accuracy");
  EXPECT_FALSE(r.holds);
  EXPECT_NEAR(r.metric, 0.4, 1e-12);
  EXPECT_DOUBLE_EQ(r.detail.at("budget").get<double>(), 0.2);
  m.rows[0].value = 0.68;  // within 5 points of look-ahead
  EXPECT_TRUE(only(paper_experiment_records(m), "E5", "accuracy").holds);
}

TEST(ClaimCanFail, E6_HeavyHittersDoNotRescueAPattern) {
  // strided falls 50% short and stays 40% short with heavy hitters: no recovery. fixed recovers.
  const auto rs = paper_experiment_records(perplexities({{policy_name(PolicyId::Strided), 0.2, 30.0},
                                                         {policy_name(PolicyId::StridedH2O), 0.2, 28.0},
                                                         {policy_name(PolicyId::Fixed), 0.2, 30.0},
                                                         {policy_name(PolicyId::FixedH2O), 0.2, 20.5}}));
  const auto& strided = only(rs, "E6", "strided, perplexity");
  EXPECT_FALSE(strided.holds);
  EXPECT_TRUE(strided.detail.at("pattern_falls_short").get<bool>());
  EXPECT_FALSE(strided.detail.at("heavy_hitters_recover").get<bool>());
  EXPECT_TRUE(only(rs, "E6", "fixed, perplexity").holds);
}

TEST(ClaimCanFail, E9_RecentTokensAloneBeatHeavyHitters) {
  // Both parts alone fall short and together match the full cache, but the window beats heavy hitters.
  const auto rs = paper_experiment_records(perplexities({{policy_name(PolicyId::Heavy), 0.2, 60.0},
                                                         {policy_name(PolicyId::Window), 0.2, 30.0},
                                                         {policy_name(PolicyId::H2O), 0.2, 20.4}}));
  const auto& r = only(rs, "E9", "perplexity");
  EXPECT_FALSE(r.holds);
  EXPECT_FALSE(r.detail.at("heavy_beats_local").get<bool>());
  EXPECT_TRUE(r.detail.at("together_comparable").get<bool>());
  EXPECT_TRUE(only(paper_experiment_records(perplexities({{policy_name(PolicyId::Heavy), 0.2, 25.0},
                                                          {policy_name(PolicyId::Window), 0.2, 30.0},
                                                          {policy_name(PolicyId::H2O), 0.2, 20.4}})),
                   "E9", "perplexity")
                  .holds);
}

TEST(ClaimCanFail, E10_EvictionThatRepeatsItself) {
  // h2o's continuations repeat more than the full cache's: fewer distinct bigrams, more repeated 4-grams.
  const CheckRecord r = diversity_record({0.2, 0.9, 0.05, 0.6, 0.3});
  EXPECT_EQ(r.id, "E10");
  EXPECT_FALSE(r.holds);
  EXPECT_NEAR(r.metric, -0.3, 1e-12);
  EXPECT_FALSE(r.detail.at("less_repeated").get<bool>());
  EXPECT_TRUE(diversity_record({0.2, 0.8, 0.1, 0.85, 0.05}).holds);
  EXPECT_FALSE(diversity_record({0.2, 0.8, 0.1, 0.85, 0.2}).holds);  // more distinct but more repeated
}

TEST(ClaimCanFail, E8_QuantizationAndEvictionCompound) {
  // h2o costs 5%, a 4-bit full cache 2%, together 30%: the two compound instead of staying within either.
  LoopMeasurements m =
      perplexities({{policy_name(PolicyId::H2O), 0.2, 21.0}, {policy_name(PolicyId::H2O) + "+int4", 0.2, 26.0}});
  m.quantized_suffix = "+int4";
  m.full_quantized = 20.4;
  const auto rs = paper_experiment_records(m);
  const auto& r = only(rs, "E8", "perplexity");
  EXPECT_FALSE(r.holds);
  EXPECT_NEAR(r.metric, 0.3 - 0.05, 1e-12);
  m.rows[1].value = 21.3;
  EXPECT_TRUE(only(paper_experiment_records(m), "E8", "perplexity").holds);
  m.quantized_suffix.clear();  // no quantized rows: no record
  const auto none = paper_experiment_records(m);
  EXPECT_TRUE(std::none_of(none.begin(), none.end(), [](const CheckRecord& x) { return x.id == "E8"; }));
}

TEST(ClaimCanFail, E7_FewShotInputsBreakEviction) {
  // With 5 shots h2o answers 0.30 where the full cache answers 0.80: not comparable.
  LoopMeasurements m;
  m.metric = LoopMetric::Accuracy;
  m.full = 0.8;
  m.shots = 5;
  m.rows = {{policy_name(PolicyId::H2O), 0.2, 0.3},
            {policy_name(PolicyId::AntiH2O), 0.2, 0.1},
            {policy_name(PolicyId::Random), 0.2, 0.7}};
  const auto rs = paper_experiment_records(m);
  ASSERT_EQ(rs.size(), 1u);  // few-shot measurements judge E7 only
  const auto& r = only(rs, "E7", "accuracy, 5 shots");
  EXPECT_FALSE(r.holds);
  EXPECT_NEAR(r.metric, 0.5, 1e-12);
  m.rows[0].value = 0.78;
  EXPECT_TRUE(only(paper_experiment_records(m), "E7", "accuracy, 5 shots").holds);
}
