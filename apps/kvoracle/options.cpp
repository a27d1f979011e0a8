#include "options.hpp"

#include <algorithm>
#include <sstream>

#include "kvo/core/concave.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/trace.hpp"

namespace kvo::cli {

RunConfig RunArgs::build(PolicyId policy, const Trace* trace) const {
  RunConfig c;
  c.policy.id = policy;
  c.policy.sinks = sinks;
  c.policy.history = history;
  c.policy.objective.name = objective;
  c.policy.objective.h = parse_concave(h);
  c.policy.objective.window = window;
  c.policy.objective.alpha = alpha;
  if (!policy_traits(policy).offline) make_policy(c.policy);  // validates the parameters and the objective
  c.budget = Budget::parse(budget, recent, overrides);
  c.gqa = parse_gqa(gqa);
  c.prompt_len = prompt_len.value_or(trace ? trace->prompt_len : 0);
  c.seed = seed;
  c.layers = layers;
  c.heads = heads;
  if (trace) c.validate(*trace);
  return c;
}

void add_run_options(CLI::App* cmd, RunArgs& a, RunOptionSet set) {
  const std::string policy = "Policy parameters", budget = "Budget", run = "Run";
  cmd->add_option("--sinks", a.sinks, "streaming: attention-sink tokens kept forever")
      ->capture_default_str()
      ->group(policy);
  cmd->add_option("--history", a.history, "scissorhands: steps of history")->capture_default_str()->group(policy);
  cmd->add_option("--objective", a.objective,
                  "greedy: set function (acc, one-step, dense-acc, mass, fl, sat-cov, fidelity)")
      ->capture_default_str()
      ->group(policy);
  cmd->add_option("--h", a.h, "concave transform of h2o-paper / greedy objectives: id, sqrt, log")
      ->capture_default_str()
      ->group(policy);
  cmd->add_option("--window", a.window, "fl / sat-cov objectives: client queries")
      ->capture_default_str()
      ->group(policy);
  cmd->add_option("--alpha", a.alpha, "sat-cov objective: saturation fraction")->capture_default_str()->group(policy);
  if (set.budget_total)
    cmd->add_option("--budget,-b", a.budget, "KV budget per head: tokens (64) or a ratio of n (0.2, 20%)")
        ->capture_default_str()
        ->group(budget);
  cmd->add_option("--recent", a.recent,
                  "recent-window part of the budget: tokens or a ratio of the budget (default: half)")
      ->group(budget);
  cmd->add_option("--budget-override", a.overrides, "per-layer or per-head budget: L3=0.1, L3H2=32 (repeatable)")
      ->group(budget);
  cmd->add_option("--seed", a.seed, "seed of randomised policies")->capture_default_str()->group(run);
  if (!set.trace_selection) return;
  cmd->add_option("--gqa", a.gqa, "grouped-query attention: query (a cache per query head), kv-mean, kv-max")
      ->capture_default_str()
      ->group(run);
  cmd->add_option("--prompt-len", a.prompt_len,
                  "prefill length: steps before it attend the full prefix (default: the trace's prompt_len)")
      ->group(run);
  cmd->add_option("--layers", a.layers, "layers to run (default: all)")->delimiter(',')->group(run);
  cmd->add_option("--heads", a.heads, "heads to run, per layer (query heads, or KV heads with --gqa kv-*)")
      ->delimiter(',')
      ->group(run);
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

nlohmann::json option_values(const CLI::App* cmd, const std::vector<std::string>& skip) {
  nlohmann::json out = nlohmann::json::object();
  for (const CLI::Option* opt : cmd->get_options()) {
    const std::string name = opt->get_name();
    if (name.empty() || name == "--help" || std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    std::string value;
    if (opt->count() > 0) {
      for (const auto& r : opt->results()) value += (value.empty() ? "" : ",") + r;
    } else {
      value = opt->get_default_str();
    }
    out[name] = value;
  }
  return out;
}

}  // namespace kvo::cli
