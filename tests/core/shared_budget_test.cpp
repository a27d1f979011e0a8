// Budgets shared across cache units: a group of one is the policy alone, record for record; a
// layer's shared budget evicts what an independent transcription of the rule evicts; the group
// never holds more than the sum of its budgets; what cannot share a budget is refused in one line.
#include "kvo/core/shared_budget.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "kvo/core/error.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/run_options.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

namespace {

std::vector<PolicyId> score_policies() {
  std::vector<PolicyId> ids;
  for (const auto& e : policy_table())
    if (e.traits.prefill_score) ids.push_back(e.id);
  return ids;
}

ReplayOptions options(PolicyId id, BudgetScope scope, const std::string& budget, const std::string& recent,
                      int prompt) {
  ReplayOptions o;
  o.run.policy.id = id;
  o.run.budget = Budget::parse(budget, recent, {});
  o.run.budget_scope = scope;
  o.run.prompt_len = prompt;
  o.record_probs = true;
  return o;
}

void expect_same_records(const ReplayResult& a, const ReplayResult& b) {
  ASSERT_EQ(a.heads.size(), b.heads.size());
  for (size_t h = 0; h < a.heads.size(); ++h)
    for (size_t i = 0; i < a.heads[h].steps.size(); ++i) {
      const StepRecord& x = a.heads[h].steps[i];
      const StepRecord& y = b.heads[h].steps[i];
      EXPECT_EQ(x.attended, y.attended) << "head " << h << " step " << i;
      EXPECT_EQ(x.kept, y.kept) << "head " << h << " step " << i;
      EXPECT_EQ(x.evicted, y.evicted) << "head " << h << " step " << i;
      EXPECT_EQ(x.retained_mass, y.retained_mass);
      EXPECT_EQ(x.probs, y.probs);
    }
}

}  // namespace

TEST(SharedBudget, AGroupOfOneIsThePolicyAlone) {
  const Trace one_head = random_trace(2, 1, 1, 48, 8, 7, 1.5);  // a layer scope groups one unit
  const Trace one_unit = random_trace(1, 1, 1, 48, 8, 8, 1.5);  // so does the model scope
  for (PolicyId id : score_policies())
    for (int prompt : {0, 20}) {
      SCOPED_TRACE(policy_name(id) + " prompt " + std::to_string(prompt));
      expect_same_records(replay(one_head, options(id, BudgetScope::Layer, "9", "3", prompt)),
                          replay(one_head, options(id, BudgetScope::Head, "9", "3", prompt)));
      expect_same_records(replay(one_unit, options(id, BudgetScope::Model, "9", "3", prompt)),
                          replay(one_unit, options(id, BudgetScope::Head, "9", "3", prompt)));
    }
}

// H2O's rule written out again from the recorded probabilities: each unit accumulates its query's
// attention over what it attends; once the prompt is in, while the layer holds more than the sum
// of its budgets, the lowest accumulated score outside each unit's recent window leaves (ties: the
// older token, then the lower head).
TEST(SharedBudget, ALayerEvictsTheLowestAccumulatedAttentionAcrossItsHeads) {
  const Trace tr = random_trace(2, 4, 2, 60, 8, 11, 2.0);
  for (const std::string gqa : {"query", "kv-mean"})
    for (int prompt : {0, 25}) {
      SCOPED_TRACE(gqa + " prompt " + std::to_string(prompt));
      ReplayOptions o = options(PolicyId::H2O, BudgetScope::Layer, "10", "4", prompt);
      o.run.gqa = parse_gqa(gqa);
      o.run.budget = Budget::parse("10", "4", {"L1H1=6"});  // a unit's own budget still counts
      const ReplayResult r = replay(tr, o);
      const int units = gqa == "query" ? 4 : 2, per = gqa == "query" ? 1 : 2;
      bool moved = false;
      for (int l = 0; l < 2; ++l) {
        std::vector<std::vector<int>> cache(static_cast<size_t>(units));
        std::vector<std::vector<double>> acc(static_cast<size_t>(units), std::vector<double>(60, 0.0));
        std::vector<int> k(static_cast<size_t>(units)), recent(static_cast<size_t>(units));
        int capacity = 0;
        for (int u = 0; u < units; ++u) {
          const ResolvedBudget b = o.run.budget.resolve(60, l, u);
          k[u] = b.total;
          recent[u] = b.recent;
          capacity += b.total;
        }
        for (int i = 0; i < 60; ++i) {
          int held = 0;
          for (int u = 0; u < units; ++u) {
            const HeadReplay& hr = r.heads[static_cast<size_t>((l * units + u) * per)];
            const StepRecord& s = hr.steps[static_cast<size_t>(i)];
            std::vector<int> att = cache[u];
            att.push_back(i);
            ASSERT_EQ(s.attended, att) << "layer " << l << " unit " << u << " step " << i;
            for (int x = 0; x < per; ++x)  // the unit's query heads' mean (kv-mean)
              for (size_t t = 0; t < att.size(); ++t)
                acc[u][att[t]] += r.heads[static_cast<size_t>((l * units + u) * per + x)].steps[i].probs[t] / per;
            cache[u] = att;
            held += static_cast<int>(att.size());
          }
          if (i >= prompt - 1)
            for (; held > capacity; --held) {
              std::tuple<double, int, int, int> low{std::numeric_limits<double>::infinity(), 0, 0, 0};
              for (int u = 0; u < units; ++u)
                for (size_t p = 0; p + recent[u] < cache[u].size(); ++p)
                  low = std::min(
                      low, std::tuple<double, int, int, int>{acc[u][cache[u][p]], cache[u][p], u, static_cast<int>(p)});
              ASSERT_LT(std::get<0>(low), std::numeric_limits<double>::infinity());
              auto& c = cache[std::get<2>(low)];
              c.erase(c.begin() + std::get<3>(low));
            }
          for (int u = 0; u < units; ++u) {
            const StepRecord& s = r.heads[static_cast<size_t>((l * units + u) * per)].steps[static_cast<size_t>(i)];
            ASSERT_EQ(s.kept, cache[u]) << "layer " << l << " unit " << u << " step " << i;
            if (static_cast<int>(s.kept.size()) != std::min(k[u], i + 1)) moved = true;
          }
        }
      }
      EXPECT_TRUE(moved) << "the heads' counts never differed from their own budgets";
    }
}

TEST(SharedBudget, AGroupNeverHoldsMoreThanTheSumOfItsBudgets) {
  const Trace tr = random_trace(3, 2, 2, 50, 8, 12, 2.0);
  for (PolicyId id : score_policies())
    for (BudgetScope scope : {BudgetScope::Layer, BudgetScope::Model}) {
      SCOPED_TRACE(policy_name(id) + " " + budget_scope_name(scope));
      const ReplayResult r = replay(tr, options(id, scope, "8", "2", 16));
      std::map<int, int> capacity;
      for (const HeadReplay& h : r.heads) capacity[scope == BudgetScope::Model ? 0 : h.layer] += h.budget.total;
      bool moved = false;
      for (int i = 15; i < 50; ++i) {
        std::map<int, int> held;
        for (const HeadReplay& h : r.heads) {
          const auto& kept = h.steps[static_cast<size_t>(i)].kept;
          held[scope == BudgetScope::Model ? 0 : h.layer] += static_cast<int>(kept.size());
          moved |= static_cast<int>(kept.size()) != h.budget.total;
          if (id != PolicyId::Tova) {  // every unit keeps its own recent window (tova has none)
            for (int j = i - 1; j <= i; ++j) EXPECT_TRUE(std::binary_search(kept.begin(), kept.end(), j));
          }
        }
        for (const auto& [g, c] : held) EXPECT_EQ(c, capacity[g]) << "group " << g << " step " << i;
      }
      EXPECT_TRUE(moved);
    }
}

TEST(SharedBudget, WhatCannotShareABudgetIsRefusedInOneLine) {
  const Trace tr = random_trace(1, 2, 2, 20, 8, 13);
  ReplayOptions o = options(PolicyId::Streaming, BudgetScope::Layer, "5", "", 0);
  expect_refusal([&] { replay(tr, o); }, "has no per-token score to compare across cache units");
  o.run.policy.id = PolicyId::H2O;
  o.run.budget_scope = BudgetScope::Layerwise;
  expect_refusal([&] { replay(tr, o); }, "not a rule a policy evicts by");
  RunOptions ro;
  ro.budget_scope = "layer";
  expect_refusal([&] { ro.build(PolicyId::H2O, &tr); }, "compare each cache unit with its own budget");
  EXPECT_EQ(ro.build(PolicyId::H2O, &tr, SharedBudgets::Allowed).budget_scope, BudgetScope::Layer);
  ro.budget_scope = "all";
  expect_refusal([&] { ro.build(PolicyId::H2O, &tr, SharedBudgets::Allowed); }, "give one scope");
  ro.budget_scope = "sideways";
  expect_refusal([&] { ro.build(PolicyId::H2O, &tr, SharedBudgets::Allowed); }, "unknown budget scope 'sideways'");
}
