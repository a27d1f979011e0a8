#include "options.hpp"

#include <algorithm>

#include "kvo/core/error.hpp"
#include "kvo/core/trace.hpp"

namespace kvo::cli {

RunOptions RunArgs::options() const {
  RunOptions o = values;
  given.apply(run_options_schema(), o);
  return o;
}

void add_run_options(CLI::App* cmd, RunArgs& a, RunOptionSet set) {
  a.given.add(cmd, run_options_schema(), a.values, [set](const Field<RunOptions>& f) {
    return !(f.info.use == kBudgetTotalUse && !set.budget_total) &&
           !(f.info.use == kTraceSelectionUse && !set.trace_selection);
  });
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
