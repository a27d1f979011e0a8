// Option groups shared by several subcommands: the budget and the policy parameters.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "kvo/core/budget.hpp"
#include "kvo/core/policy_factory.hpp"
#include "kvo/core/replay.hpp"

namespace kvo::cli {

struct BudgetArgs {
  std::string total = "20%";
  std::string recent;  // empty: half the budget
  std::vector<std::string> overrides;
  Budget build() const;
};
void add_budget_options(CLI::App* cmd, BudgetArgs& b);

struct PolicyArgs {
  int sinks = 4;
  int history = 32;
  std::string objective = "acc";
  std::string h = "id";
  int window = 16;
  double alpha = 0.5;
  PolicySpec build(const std::string& name) const;
};
void add_policy_options(CLI::App* cmd, PolicyArgs& p);

struct ReplayArgs {
  std::string gqa = "query";
  int prompt_len = 0;
  unsigned long long seed = 0;
  std::vector<int> layers;
};
void add_replay_options(CLI::App* cmd, ReplayArgs& r);
ReplayOptions make_replay_options(const ReplayArgs& r, const BudgetArgs& b, const PolicyArgs& p,
                                  const std::string& policy, int threads);

// Splits "a,b,c".
std::vector<std::string> split_list(const std::string& s);

}  // namespace kvo::cli
