// Every theorem check can fail: for each claim C1-C27 an input on which the check must report a
// failure (a corrupted cache or score, a non-submodular function, a wrong certificate, a perturbed
// gradient, ...), asserting the claim id, the variant and where (layer, head, step). The claim
// catalogue names these tests; ClaimCatalogue.NamesItsFunctionDocAndTests keeps them in step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "claim_sink.hpp"
#include "head_data.hpp"
#include "kvo/checks/softmax_loss.hpp"
#include "kvo/core/synth.hpp"
#include "kvo/oracle/offline_oracle.hpp"
#include "test_support.hpp"
#include "trajectory.hpp"

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
// replayed. The trace lives beside the head data, which points into it.
struct Head {
  Trace trace;
  TraceChecksOptions o;
  HeadData h;
  explicit Head(Trace t, std::vector<PolicyId> policies = default_policies(PolicyListUse::Checks))
      : trace(std::move(t)) {
    o = small_check_options();
    o.policies = std::move(policies);
    h = build_head(trace, kLayer, kHead, o);
  }
  PolicyRun& run(PolicyId id) {
    for (auto& r : h.runs)
      if (r.id == id) return r;
    throw std::runtime_error("policy not replayed");
  }
  StepRecord& step(PolicyId id, int i) { return run(id).replay.steps[static_cast<size_t>(i)]; }
};

Trace synthetic_trace() {
  SynthOptions so;
  so.layers = 1;
  so.heads = 2;
  so.kv_heads = 1;
  so.tokens = 64;
  so.head_dim = 12;
  so.prompt_len = 16;
  so.seed = 5;
  return synthesize(so);
}

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

// The first step at or after `from` at which the run evicted exactly one token.
int single_eviction_after(const PolicyRun& run, int from) {
  for (int i = from; i < static_cast<int>(run.replay.steps.size()); ++i)
    if (run.replay.steps[static_cast<size_t>(i)].evicted.size() == 1) return i;
  throw std::runtime_error("no single eviction");
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
  HeadData h;
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
  PolicyRun& h2o = t.run(PolicyId::H2O);
  const int first = h2o.first_eviction();
  ASSERT_GE(first, 0);
  const int gone = h2o.replay.steps[static_cast<size_t>(first)].evicted.front(), at = first + 3;
  std::vector<int>& kept = t.step(PolicyId::H2O, at).kept;
  kept.insert(std::lower_bound(kept.begin(), kept.end(), gone), gone);
  std::vector<CheckRecord> out;
  check_invariants(t.h, t.o, out);
  const CheckRecord& r = record(out, "C1", "h2o");
  EXPECT_EQ(r.kind, ClaimKind::Theorem);
  expect_failure(r, at);
  EXPECT_GE(r.detail["re_entries"].get<long>(), 1);
  expect_holds(out, "C1", "tova");
}

TEST(ClaimCanFail, C2_TokenAttendedTwice) {
  Head t(synthetic_trace());
  const int at = single_eviction_after(t.run(PolicyId::H2OPaper), 20);
  std::vector<int>& att = t.step(PolicyId::H2OPaper, at).attended;
  att.push_back(att.front());
  std::vector<CheckRecord> out;
  check_normalisation(t.h, t.o, out);
  expect_failure(record(out, "C2", "h2o-paper"), at);
}

TEST(ClaimCanFail, C3_EvictedTokenIsNotTheArgmin) {
  Head t(synthetic_trace());
  PolicyRun& paper = t.run(PolicyId::H2OPaper);
  const int at = single_eviction_after(paper, 30);
  const StepRecord& s = t.step(PolicyId::H2OPaper, at);
  double top = 0.0;
  for (int j : s.attended) top = std::max(top, paper.scores(at, j));
  paper.scores(at, s.evicted.front()) = top + 1.0;
  std::vector<CheckRecord> out;
  check_scores(t.h, t.o, out);
  for (const char* h : {"h=id", "h=sqrt", "h=log"}) expect_failure(record(out, "C3", h), at);
}

TEST(ClaimCanFail, C4_ScoreDriftsFromRecomputation) {
  Head t(synthetic_trace());
  PolicyRun& paper = t.run(PolicyId::H2OPaper);
  const int at = single_eviction_after(paper, 30);
  paper.scores(at, t.step(PolicyId::H2OPaper, at).kept.front()) *= 1.0 + 1e-6;
  std::vector<CheckRecord> out;
  check_scores(t.h, t.o, out);
  expect_failure(record(out, "C4", "h2o-paper"), at);
}

TEST(ClaimCanFail, C5_C12_NegativeScoreBreaksMonotonicity) {
  Head t(synthetic_trace());
  PolicyRun& paper = t.run(PolicyId::H2OPaper);
  const int at = evenly_spaced(eviction_steps(paper), 4).front();
  const StepRecord& s = t.step(PolicyId::H2OPaper, at);
  paper.scores(at, s.attended.front()) = -100.0 * paper.scores.row(at).maxCoeff();
  std::vector<CheckRecord> out;
  check_scores(t.h, t.o, out);
  expect_failure(record(out, "C5", "C[id]"), at);
  expect_failure(record(out, "C12", "C[id]"), at);
  expect_holds(out, "C12", "A[id]");
}

TEST(ClaimCanFail, C6_MixedSignWeightsBreakDiminishingReturns) {
  Head t(synthetic_trace());
  PolicyRun& paper = t.run(PolicyId::H2OPaper);
  const int at = small_ground_steps(t.h, paper, t.o).front();
  const std::vector<int>& Z = t.step(PolicyId::H2OPaper, at - 1).kept;
  int flip = 0;
  for (int j = 0; j <= at; ++j)  // every other token outside Z gets a negative weight
    if (!std::binary_search(Z.begin(), Z.end(), j) && flip++ % 2 == 0) paper.scores(at, j) = -0.5;
  std::vector<CheckRecord> out;
  check_small_ground(t.h, t.o, out);
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
  PolicyRun& paper = t.run(PolicyId::H2OPaper);
  const int at = single_eviction_after(paper, 30);
  const StepRecord& s = t.step(PolicyId::H2OPaper, at);
  // f~ = f on this step (no perturbation to hide behind), and the evicted token the heaviest.
  double total = 0.0;
  for (int j : s.attended) total += t.h.acc(at, j);
  for (int j : s.attended) paper.scores(at, j) = t.h.acc(at, j);
  t.h.acc(at, s.evicted.front()) = paper.scores(at, s.evicted.front()) = 10.0 * total;
  std::vector<CheckRecord> out;
  check_robustness(t.h, trajectory_of(t.h), t.o, out);
  expect_failure(record(out, "C9", "f=A f~=C"), at);
}

TEST(ClaimCanFail, C10_AccumulatedScoreDecreases) {
  Head t(synthetic_trace());
  const int at = 40;
  for (int j : t.step(PolicyId::H2OPaper, at - 1).kept) t.h.acc(at, j) *= 0.5;
  std::vector<CheckRecord> out;
  HeadExtras extras;
  check_udc(t.h, trajectory_of(t.h), t.o, out, extras);
  const CheckRecord& r = record(out, "C10", "A[id]");
  EXPECT_EQ(r.kind, ClaimKind::Theorem);
  expect_failure(r, at);
  expect_holds(out, "C10", "C[id]");
}

TEST(ClaimCanFail, C11_OptimumJumps) {
  Head t(synthetic_trace());
  const int at = 40;
  t.h.acc.row(at + 1) *= 3.0;
  std::vector<CheckRecord> out;
  HeadExtras extras;
  check_udc(t.h, trajectory_of(t.h), t.o, out, extras);
  expect_failure(record(out, "C11", "A[id] gamma^proof <= 1/(k+1)"), at);
  expect_failure(record(out, "C11", "A[id]"), at);
}

TEST(ClaimCanFail, C13_EvictionLowersTheValue) {
  Head t(synthetic_trace());
  PolicyRun& paper = t.run(PolicyId::H2OPaper);
  int at = single_eviction_after(paper, 40);
  while (t.step(PolicyId::H2OPaper, at).evicted.front() == at) at = single_eviction_after(paper, at + 1);
  paper.scores(at, t.step(PolicyId::H2OPaper, at).evicted.front()) += 100.0;  // it was in S_{i-1}
  std::vector<CheckRecord> out;
  check_induction(t.h, trajectory_of(t.h), t.o, out);
  const CheckRecord& r = record(out, "C13", "h2o-paper C[id]");
  EXPECT_EQ(r.kind, ClaimKind::Theorem);
  expect_failure(r, at);
  EXPECT_GE(r.detail["link_a_failures"].get<long>(), 1);
}

TEST(ClaimCanFail, C14_DecisionsStopBeingGreedy) {
  // f~ = f = A, so eps+ = eps- = 0 and the two-sided bound is the bare induction; the trajectory is
  // greedy on A until step 40, then evicts the heaviest token at every step.
  const int wrong = 40;
  for (const int bad : {-1, wrong}) {
    Head t(synthetic_trace(), {PolicyId::H2OPaper});
    PolicyRun& paper = t.run(PolicyId::H2OPaper);
    paper.scores = t.h.acc;
    paper.replay.steps = greedy_trajectory(t.h.acc, t.h.k(), bad);
    t.o.checks = {"C14"};
    std::vector<CheckRecord> out;
    check_induction(t.h, trajectory_of(t.h), t.o, out);
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
  const int at = 50, k = t.h.k();
  std::vector<int> order(static_cast<size_t>(at) + 1);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return t.h.acc(at, a) < t.h.acc(at, b); });
  std::vector<int> lightest(order.begin(), order.begin() + k);
  std::sort(lightest.begin(), lightest.end());
  t.step(PolicyId::H2O, at).kept = lightest;
  std::vector<CheckRecord> out;
  HeadExtras extras;
  check_ratio(t.h, trajectory_of(t.h), t.o, out, extras);
  const CheckRecord& r = record(out, "C15", "h2o");
  EXPECT_EQ(r.kind, ClaimKind::Finding);
  expect_failure(r, at);
  EXPECT_GT(r.metric, 0.0);  // alpha_hat
}

TEST(ClaimCanFail, C17_UniformAttentionIsNotSparse) {
  Trace tr = synthetic_trace();
  std::fill(tr.q[0].begin(), tr.q[0].end(), 0.0f);  // every logit 0: uniform attention
  Head t(std::move(tr), {PolicyId::H2O});
  std::vector<CheckRecord> out;
  check_attention_stats(t.h, t.o, out);
  const CheckRecord& r = record(out, "C17", "sparsity and goodness");
  expect_failure(r, -1);
  EXPECT_EQ(r.metric, 0.0);
}

TEST(ClaimCanFail, C18_AttentionRowNotADistribution) {
  Head t(synthetic_trace());
  const int at = 45;
  t.h.a.row(at) *= 2.0;
  std::vector<CheckRecord> out;
  check_attention_stats(t.h, t.o, out);
  expect_failure(record(out, "C18", "h2o"), at);
}

TEST(ClaimCanFail, C19_WrongCertificate) {
  Head t(synthetic_trace());
  OfflineProblem p;
  p.w = t.h.a;
  p.budget = t.h.k();
  OfflineSolution opt = solve_offline(p);
  std::fill(opt.price.begin(), opt.price.end(), 0.0);  // prices of nothing: the dual bound opens
  std::vector<CheckRecord> out;
  check_offline_solution(t.h, p, opt, {}, t.o, out);
  const CheckRecord& r = record(out, "C19", "retained mass");
  expect_failure(r, -1);
  EXPECT_NE(r.detail["violations"].dump().find("certificate gap"), std::string::npos);
}

TEST(ClaimCanFail, C19_NestedPolicyThatReadmits) {
  Head t(synthetic_trace());
  OfflineProblem p;
  p.w = t.h.a;
  p.budget = t.h.k();
  // Flagged nested, but each cache is that step's top-k: tokens come back, and the value exceeds OPT_dyn.
  ScheduleRun cheat{"cheat", true, {}};
  for (int i = 0; i < t.h.n; ++i) {
    std::vector<int> order(static_cast<size_t>(i) + 1);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return t.h.a(i, a) > t.h.a(i, b); });
    order.resize(std::min<size_t>(order.size(), static_cast<size_t>(p.budget)));
    std::sort(order.begin(), order.end());
    cheat.kept.push_back(order);
  }
  std::vector<CheckRecord> out;
  check_offline_solution(t.h, p, solve_offline(p), {cheat}, t.o, out);
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
  const int at = 50;
  t.step(PolicyId::H2O, at).kept.pop_back();
  std::vector<CheckRecord> out;
  check_invariants(t.h, t.o, out);
  const CheckRecord& r = record(out, "C27", "h2o");
  expect_failure(r, at);
  EXPECT_EQ(r.detail["size"].get<long>(), 1);
}

TEST(ClaimCanFail, UncorruptedHeadHoldsEveryTheorem) {
  Head t(synthetic_trace());
  std::vector<CheckRecord> out;
  HeadExtras extras;
  check_invariants(t.h, t.o, out);
  check_normalisation(t.h, t.o, out);
  check_scores(t.h, t.o, out);
  check_udc(t.h, trajectory_of(t.h), t.o, out, extras);
  check_induction(t.h, trajectory_of(t.h), t.o, out);
  check_robustness(t.h, trajectory_of(t.h), t.o, out);
  check_ratio(t.h, trajectory_of(t.h), t.o, out, extras);
  check_small_ground(t.h, t.o, out);
  check_attention_stats(t.h, t.o, out);
  check_offline(t.h, t.o, out);
  for (const auto& r : out)
    if (r.kind == ClaimKind::Theorem) {
      EXPECT_TRUE(r.holds) << r.id << " " << r.variant << " " << r.detail.dump();
    }
}
