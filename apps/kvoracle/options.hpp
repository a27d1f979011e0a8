// Option groups shared by several subcommands: the budget and the policy parameters.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "kvo/core/budget.hpp"
#include "kvo/core/policy_factory.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/safetensors.hpp"

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

// --dtype of the commands that write traces: f32, f16 or bf16 (one option, one mapping).
void add_trace_dtype_option(CLI::App* cmd, std::string& dtype);
DType trace_dtype(const std::string& dtype);

// Splits "a,b,c".
std::vector<std::string> split_list(const std::string& s);

}  // namespace kvo::cli
