#include "kvo/core/run_options.hpp"

#include "kvo/core/concave.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace.hpp"

namespace kvo {

namespace {

using G = RunOptionGroup;
using S = RunOptionScope;
using O = RunOptions;

const RunOptionEntry kRunOptions[] = {
    {"sinks", "--sinks", "", &O::sinks, G::Policy, S::Every, false, "streaming: attention-sink tokens kept forever"},
    {"history", "--history", "", &O::history, G::Policy, S::Every, false, "scissorhands: steps of history"},
    {"objective", "--objective", "", &O::objective, G::Policy, S::Every, false,
     "greedy: set function (acc, one-step, dense-acc, mass, fl, sat-cov, fidelity)"},
    {"concave", "--concave", "--h", &O::concave, G::Policy, S::Every, false,
     "concave transform h of h2o-paper / greedy objectives: id, sqrt, log"},
    {"window", "--window", "", &O::window, G::Policy, S::Every, false, "fl / sat-cov objectives: client queries"},
    {"alpha", "--alpha", "", &O::alpha, G::Policy, S::Every, false, "sat-cov objective: saturation fraction"},
    {"budget", "--budget", "-b", &O::budget, G::Budget, S::BudgetTotal, false,
     "KV budget per head: tokens (64) or a ratio of n (0.2, 20%)"},
    {"recent", "--recent", "", &O::recent, G::Budget, S::Every, false,
     "recent-window part of the budget: tokens or a ratio of the budget (default: half)"},
    {"budget_overrides", "--budget-override", "", &O::budget_overrides, G::Budget, S::Every, true,
     "per-layer or per-head budget: L3=0.1, L3H2=32 (repeatable)"},
    {"budget_scope", "--budget-scope", "", &O::budget_scope, G::Budget, S::Every, false,
     "who shares the budget: head (each cache unit its own), layer (a layer's units share their sum) or "
     "model; layer and model evict the lowest score across the group (h2o, tova, scissorhands; replay, "
     "eval, tasks and the eviction manager)"},
    {"seed", "--seed", "", &O::seed, G::Run, S::Every, false, "seed of randomised policies"},
    {"gqa", "--gqa", "", &O::gqa, G::Run, S::TraceSelection, false,
     "grouped-query attention: query (a cache per query head), kv-mean, kv-max"},
    {"prompt_len", "--prompt-len", "", &O::prompt_len, G::Run, S::TraceSelection, false,
     "prefill length: steps before it attend the full prefix (default: the trace's prompt_len)"},
    {"layers", "--layers", "", &O::layers, G::Run, S::TraceSelection, true, "layers to run (default: all)"},
    {"heads", "--heads", "", &O::heads, G::Run, S::TraceSelection, true,
     "heads to run, per layer (query heads, or KV heads with gqa kv-mean / kv-max)"},
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s.append(s.empty() ? "" : ",").append(x);
  return s;
}

std::string number_text(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::span<const RunOptionEntry> run_option_table() { return kRunOptions; }

const RunOptionEntry* find_run_option(std::string_view name) {
  for (const auto& e : run_option_table())
    if (e.name == name) return &e;
  return nullptr;
}

std::string run_option_text(const RunOptions& o, const RunOptionEntry& e) {
  return std::visit(
      [&](auto field) -> std::string {
        const auto& v = o.*field;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, double>) {
          return number_text(v);
        } else if constexpr (std::is_same_v<T, std::optional<int>>) {
          return v ? std::to_string(*v) : "";
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return join(v);
        } else if constexpr (std::is_same_v<T, std::vector<int>>) {
          std::vector<std::string> s;
          for (int x : v) s.push_back(std::to_string(x));
          return join(s);
        } else {
          return std::to_string(v);
        }
      },
      e.field);
}

void set_run_option(RunOptions& o, const RunOptionEntry& e, std::string_view text) {
  const std::string what(e.name);
  std::visit(
      [&](auto field) {
        auto& v = o.*field;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          v = std::string(text);
        } else if constexpr (std::is_same_v<T, int>) {
          v = parse_int(text, what);
        } else if constexpr (std::is_same_v<T, double>) {
          v = parse_number(text, what);
        } else if constexpr (std::is_same_v<T, std::uint64_t>) {
          const double d = parse_number(text, what);
          require(d >= 0 && d == static_cast<double>(static_cast<std::uint64_t>(d)),
                  what + ": '" + std::string(text) + "' is not a non-negative integer");
          v = static_cast<std::uint64_t>(d);
        } else if constexpr (std::is_same_v<T, std::optional<int>>) {
          v = parse_int(text, what);
        } else if constexpr (std::is_same_v<T, std::vector<int>>) {
          v = parse_int_list(text, what);
        } else {
          v = split_list(text, what);
        }
      },
      e.field);
}

nlohmann::json to_json(const RunOptions& o) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& e : run_option_table())
    std::visit(
        [&](auto field) {
          const auto& v = o.*field;
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::optional<int>>) {
            j[std::string(e.name)] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
          } else {
            j[std::string(e.name)] = v;
          }
        },
        e.field);
  return j;
}

RunOptions run_options_from_json(const nlohmann::json& j) {
  require(j.is_object(), "run options: expected a JSON object");
  RunOptions o;
  for (const auto& [key, value] : j.items()) {
    const RunOptionEntry* e = find_run_option(key);
    require(e != nullptr, "unknown run option '" + key + "'");
    if (value.is_null()) continue;
    try {
      std::visit(
          [&](auto field) {
            auto& v = o.*field;
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::optional<int>>) {
              v = value.get<int>();
            } else {
              v = value.get<T>();
            }
          },
          e->field);
    } catch (const nlohmann::json::exception&) {
      throw Error("run option '" + key + "' has the wrong type: " + value.dump());
    }
  }
  return o;
}

RunConfig RunOptions::build(PolicyId policy, const Trace* trace, SharedBudgets shared) const {
  RunConfig c;
  c.policy.id = policy;
  c.policy.sinks = sinks;
  c.policy.history = history;
  c.policy.objective.name = objective;
  c.policy.objective.h = parse_concave(concave);
  c.policy.objective.window = window;
  c.policy.objective.alpha = alpha;
  if (!policy_traits(policy).offline) make_policy(c.policy);  // validates the parameters and the objective
  c.budget = Budget::parse(budget, recent, budget_overrides);
  c.gqa = parse_gqa(gqa);
  c.prompt_len = prompt_len.value_or(trace ? trace->prompt_len : 0);
  c.seed = seed;
  c.layers = layers;
  c.heads = heads;
  const std::vector<BudgetScope> scope = parse_budget_scopes(budget_scope);
  require(scope.size() == 1, "budget_scope: give one scope (head, layer or model)");
  c.budget_scope = scope.front();
  c.validate_budget_scope(shared);
  if (trace) c.validate(*trace, shared);
  return c;
}

}  // namespace kvo
