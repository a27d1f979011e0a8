// Several replays in one lockstep pass (core/replay_lockstep.hpp): every option's end steps equal
// replay() of that option alone (end_steps_of), bit for bit, whatever the mix of contracts, shared budgets and
// policies run together; what the pass cannot describe is refused in one line.
#include "kvo/core/replay_lockstep.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "kvo/core/error.hpp"
#include "test_support.hpp"

using namespace kvo;
using namespace kvo::test;

namespace {

ReplayOptions under(PolicyId id, const EvictionContract& c) {
  ReplayOptions o;
  o.run.policy.id = id;
  o.run.gqa = GqaMode::KvMean;
  o.contract = c;
  return o;
}

}  // namespace

TEST(ReplayLockstep, EveryReplayEndsWhereItEndsAlone) {
  const Trace tr = random_trace(3, 6, 2, 48, 8, 11, 1.7);
  std::vector<EvictionContract> contracts(7);
  contracts[0].budget = 9;
  contracts[0].recent = 2;
  contracts[1] = contracts[0];
  contracts[1].kept_sets = KeptSets::Model;
  contracts[1].sinks = 2;
  contracts[2] = contracts[0];
  contracts[2].kept_sets = KeptSets::Layer;
  contracts[2].budget = 20;
  contracts[2].sinks = 4;
  contracts[2].recent = 3;
  contracts[2].page_size = 4;
  contracts[3].budget = 10;
  contracts[3].recent = 2;
  contracts[3].prompt_len = 20;
  contracts[3].chunk = 8;
  contracts[3].interval = 5;
  contracts[4].kept_sets = KeptSets::Model;
  contracts[4].budget = 10;
  contracts[4].recent = 3;
  contracts[4].delay = 2;
  contracts[5].kept_sets = KeptSets::Layer;
  contracts[5].budget = 16;
  contracts[5].recent = 4;
  contracts[5].admission_only = true;
  contracts[6].budget = 8;
  contracts[6].budget_scope = BudgetScope::Layer;
  std::vector<ReplayOptions> options;
  for (const EvictionContract& c : contracts)
    for (PolicyId id : {PolicyId::H2O, PolicyId::Tova, PolicyId::Scissorhands}) {
      options.push_back(under(id, c));
    }
  ReplayOptions shared;  // no contract: a budget shared by the model's units, a prompt
  shared.run.policy.id = PolicyId::H2O;
  shared.run.gqa = GqaMode::KvMax;
  shared.run.budget = Budget::parse("8", "2", {});
  shared.run.budget_scope = BudgetScope::Model;
  shared.run.prompt_len = 12;
  options.push_back(shared);
  for (int threads : {1, 3}) {
    const UnitEndSteps together = replay_end_steps(tr, options, threads);
    ASSERT_EQ(together.size(), options.size());
    for (size_t r = 0; r < options.size(); ++r) {
      EXPECT_EQ(together[r], end_steps_of(tr, replay(tr, options[r])))
          << "option " << r << " (" << policy_name(options[r].run.policy.id) << "), " << threads << " threads";
      const auto evicts = [&](const std::vector<int>& end) {
        return std::any_of(end.begin(), end.end() - 1, [&](int e) { return e < tr.n_tokens - 1; });
      };
      EXPECT_TRUE(std::any_of(together[r].begin(), together[r].end(), evicts)) << "option " << r << " evicts nothing";
    }
  }
}

TEST(ReplayLockstep, CountsEveryStepAndRefusesWhatItCannotDescribe) {
  const Trace tr = random_trace(2, 4, 2, 24, 8, 5);
  EvictionContract c;
  c.budget = 6;
  int steps = 0;
  replay_end_steps(tr, {under(PolicyId::H2O, c)}, 2, [&](int i) { EXPECT_EQ(i, steps++); });
  EXPECT_EQ(steps, 24);
  ReplayOptions query = under(PolicyId::H2O, c);
  query.contract.reset();
  query.run.gqa = GqaMode::PerQueryHead;
  EXPECT_THROW(replay_end_steps(tr, {query}), Error);
  ReplayOptions some = under(PolicyId::H2O, c);
  some.run.layers = {1};
  EXPECT_THROW(replay_end_steps(tr, {some}), Error);
  ReplayOptions dense = under(PolicyId::H2O, c);
  dense.contract.reset();
  dense.run.policy.id = PolicyId::Lookahead;
  EXPECT_THROW(replay_end_steps(tr, {dense}), Error);
  EXPECT_THROW(replay_end_steps(tr, {under(PolicyId::H2O, c)}, 2,
                                [](int i) {
                                  if (i == 7) throw Error("stopped at step 7");
                                }),
               Error);
}
