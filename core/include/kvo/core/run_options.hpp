// The one declaration of the options that configure a run (policy parameters, budget, trace
// selection): each has a name, a type, a default, a help line and a group in run_options_schema().
// The CLI's flags and the Python module's keyword arguments are both generated from that schema
// and both end in RunOptions::build, so they take the same options with the same defaults.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvo/core/field_schema.hpp"
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

// Which commands take an option (FieldInfo::use): every run (""), those with one total budget (not
// eval's --budgets), those that select parts of a trace (not eval, which decodes a text).
inline constexpr const char* kBudgetTotalUse = "budget total";
inline constexpr const char* kTraceSelectionUse = "trace selection";
// The run options of a closed loop over a whole text (eval, tasks): neither of the two above.
inline bool decoding_run_option(const Field<RunOptions>& f) { return f.info.use.empty(); }

// The one declaration of the run options: name, flag, help, group ("Policy parameters", "Budget",
// "Run") and scope of each; its JSON form is every option by name.
const Schema<RunOptions>& run_options_schema();

}  // namespace kvo
