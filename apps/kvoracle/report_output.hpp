// What a command does with its finished report: prints its text, then writes its first plot and
// the result's JSON to the paths given (atomically), naming each file written.
#pragma once
#include <functional>
#include <string>

#include "kvo/report/report.hpp"

namespace kvo::cli {

// An empty path writes nothing; json_text is rendered only when json_path is set.
void print_report(const Report& report, const std::string& plot_path, const std::string& json_path,
                  const std::function<std::string()>& json_text);

}  // namespace kvo::cli
