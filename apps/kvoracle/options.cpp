#include "options.hpp"

#include <sstream>

#include "kvo/core/concave.hpp"
#include "kvo/core/error.hpp"

namespace kvo::cli {

Budget BudgetArgs::build() const {
  std::optional<Amount> r;
  if (!recent.empty()) r = Amount::parse(recent, /*allow_zero=*/true);
  Budget b(Amount::parse(total), r);
  for (const auto& o : overrides) b.add_override(o);
  return b;
}

void add_budget_options(CLI::App* cmd, BudgetArgs& b) {
  cmd->add_option("--budget,-b", b.total, "KV budget per head: tokens (64) or a ratio of n (0.2, 20%)")
      ->capture_default_str();
  cmd->add_option("--recent", b.recent,
                  "recent-window part of the budget: tokens or a ratio of the budget (default: half)");
  cmd->add_option("--budget-override", b.overrides, "per-layer or per-head budget: L3=0.1, L3H2=32 (repeatable)");
}

PolicySpec PolicyArgs::build(const std::string& name) const {
  PolicySpec s;
  s.name = name;
  s.sinks = sinks;
  s.history = history;
  s.objective.name = objective;
  s.objective.h = parse_concave(h);
  s.objective.window = window;
  s.objective.alpha = alpha;
  require(sinks >= 0, "--sinks must be >= 0");
  require(history >= 1, "--history must be >= 1");
  require(window >= 1, "--window must be >= 1");
  make_objective(s.objective);  // validates the objective name
  return s;
}

void add_policy_options(CLI::App* cmd, PolicyArgs& p) {
  cmd->add_option("--sinks", p.sinks, "streaming: attention-sink tokens kept forever")->capture_default_str();
  cmd->add_option("--history", p.history, "scissorhands: steps of history")->capture_default_str();
  cmd->add_option("--objective", p.objective,
                  "greedy: set function (acc, one-step, dense-acc, mass, fl, sat-cov, fidelity)")
      ->capture_default_str();
  cmd->add_option("--h", p.h, "concave transform of h2o-paper / greedy objectives: id, sqrt, log")
      ->capture_default_str();
  cmd->add_option("--window", p.window, "fl / sat-cov objectives: client queries")->capture_default_str();
  cmd->add_option("--alpha", p.alpha, "sat-cov objective: saturation fraction")->capture_default_str();
}

void add_replay_options(CLI::App* cmd, ReplayArgs& r) {
  cmd->add_option("--gqa", r.gqa, "grouped-query attention: query (a cache per query head), kv-mean, kv-max")
      ->capture_default_str();
  cmd->add_option("--prompt-len", r.prompt_len, "prefill length: steps before it attend the full prefix")
      ->capture_default_str();
  cmd->add_option("--seed", r.seed, "seed of randomised policies")->capture_default_str();
  cmd->add_option("--layers", r.layers, "layers to replay (default: all)")->delimiter(',');
}

ReplayOptions make_replay_options(const ReplayArgs& r, const BudgetArgs& b, const PolicyArgs& p,
                                  const std::string& policy, int threads) {
  ReplayOptions o;
  o.policy = p.build(policy);
  o.budget = b.build();
  o.gqa = parse_gqa(r.gqa);
  o.prompt_len = r.prompt_len;
  o.seed = r.seed;
  o.layers = r.layers;
  o.threads = threads;
  return o;
}

void add_trace_dtype_option(CLI::App* cmd, std::string& dtype) {
  cmd->add_option("--dtype", dtype, "trace storage: f32, f16 or bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
}

DType trace_dtype(const std::string& dtype) {
  return dtype == "f16" ? DType::F16 : dtype == "bf16" ? DType::BF16 : DType::F32;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace kvo::cli
