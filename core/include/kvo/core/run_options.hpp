// The one declaration of the options that configure a run (policy parameters, budget, trace
// selection): each has a name, a type, a default, a help line and a group in run_option_table().
// The CLI's flags and the Python module's keyword arguments are both generated from that table and
// both end in RunOptions::build, so they take the same options with the same defaults.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kvo/core/run_config.hpp"

namespace kvo {

// Option values as given, before parsing. Policy parameters default to PolicySpec's.
struct RunOptions {
  int sinks = PolicySpec{}.sinks;
  int history = PolicySpec{}.history;
  std::string objective = ObjectiveSpec{}.name;
  std::string concave = to_string(ObjectiveSpec{}.h);
  int window = ObjectiveSpec{}.window;
  double alpha = ObjectiveSpec{}.alpha;
  std::string budget = "20%";
  std::string recent;  // empty: half the budget
  std::vector<std::string> budget_overrides;
  std::string budget_scope = "head";
  std::string gqa = to_string(GqaMode::PerQueryHead);
  std::optional<int> prompt_len;  // default: the trace's prompt_len metadata (0 without a trace)
  std::uint64_t seed = 0;
  std::vector<int> layers, heads;  // empty: all

  // The validated configuration of one policy; with a trace, checked against it and with the
  // prompt length defaulting to the trace's. kvo::Error names the option at fault.
  // A budget scope other than head is refused unless `shared` allows it (RunConfig::validate_budget_scope).
  RunConfig build(PolicyId policy, const Trace* trace = nullptr, SharedBudgets shared = SharedBudgets::Refused) const;
};

enum class RunOptionGroup { Policy, Budget, Run };
// Which commands take an option: every run, those with one total budget (not eval's --budgets),
// those that select parts of a trace (not eval, which decodes a text).
enum class RunOptionScope { Every, BudgetTotal, TraceSelection };

using RunOptionField = std::variant<int RunOptions::*, double RunOptions::*, std::uint64_t RunOptions::*,
                                    std::string RunOptions::*, std::optional<int> RunOptions::*,
                                    std::vector<int> RunOptions::*, std::vector<std::string> RunOptions::*>;

struct RunOptionEntry {
  std::string_view name;   // Python keyword, JSON key and the name errors use: "budget_overrides"
  std::string_view flag;   // the CLI's long option: "--budget-override"
  std::string_view alias;  // older or short CLI spellings kept working ("-b", "--h"), or empty
  RunOptionField field;
  RunOptionGroup group;
  RunOptionScope scope;
  bool repeatable;  // a list: comma-separated items, and (CLI) the flag may repeat
  std::string_view help;
};

std::span<const RunOptionEntry> run_option_table();
const RunOptionEntry* find_run_option(std::string_view name);  // by name; nullptr when unknown

// An option's value in `o` as text ("" for an empty list or an unset optional): what help shows as
// the default.
std::string run_option_text(const RunOptions& o, const RunOptionEntry& e);

// Sets one option from its textual form (the CLI's value, a JSON string); lists split with
// split_list. kvo::Error naming the option for a value of the wrong type.
void set_run_option(RunOptions& o, const RunOptionEntry& e, std::string_view text);

// The JSON form: every option by name; from_json takes a subset and refuses unknown names.
nlohmann::json to_json(const RunOptions& o);
RunOptions run_options_from_json(const nlohmann::json& j);

}  // namespace kvo
