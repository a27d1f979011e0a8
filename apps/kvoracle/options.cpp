#include "options.hpp"

#include <algorithm>

#include "kvo/core/error.hpp"
#include "kvo/core/trace.hpp"

namespace kvo::cli {

RunOptions RunArgs::options() const {
  RunOptions o = values;
  for (const auto& e : run_option_table()) {
    const auto it = given.find(e.name);
    if (it == given.end() || it->second.empty()) continue;
    std::string text;  // a repeated list flag: its items joined
    for (const auto& v : it->second) text += (text.empty() ? "" : ",") + v;
    set_run_option(o, e, e.repeatable ? text : it->second.back());
  }
  return o;
}

void add_run_options(CLI::App* cmd, RunArgs& a, RunOptionSet set) {
  for (const auto& e : run_option_table()) {
    if ((e.scope == RunOptionScope::BudgetTotal && !set.budget_total) ||
        (e.scope == RunOptionScope::TraceSelection && !set.trace_selection))
      continue;
    const std::string name(e.name);
    std::string flags(e.flag);
    if (!e.alias.empty()) flags += "," + std::string(e.alias);
    auto* opt = cmd->add_option(flags, a.given[name], std::string(e.help));
    opt->default_str(run_option_text(a.values, e));
    opt->expected(1);  // one value per occurrence: a list is comma-separated or its flag repeated
    if (!e.repeatable) opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    opt->group(e.group == RunOptionGroup::Policy   ? "Policy parameters"
               : e.group == RunOptionGroup::Budget ? "Budget"
                                                   : "Run");
  }
}

void add_trace_dtype_option(CLI::App* cmd, std::string& dtype) {
  cmd->add_option("--dtype", dtype, "trace storage: f32, f16 or bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
}

DType trace_dtype(const std::string& dtype) {
  return dtype == "f16" ? DType::F16 : dtype == "bf16" ? DType::BF16 : DType::F32;
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
