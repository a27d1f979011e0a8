// Writes a verify report into a directory: report.json (every record), report.md (the summary
// table a researcher reads first) and the SVG plots (ratio per step, gamma/theta heat maps,
// retained mass against budget). Every file is written atomically (temp file, then rename).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/checks/trace_checks.hpp"

namespace kvo {

std::string report_markdown(const TraceChecksResult& result, const nlohmann::json& meta);
// The plots by file name.
std::vector<std::pair<std::string, std::string>> report_plots(const TraceChecksResult& result);
// Returns the paths written.
std::vector<std::string> write_report(const std::string& dir, const TraceChecksResult& result,
                                      const nlohmann::json& meta);

}  // namespace kvo
