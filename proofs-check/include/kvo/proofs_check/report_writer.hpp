// Writes a verify report into a directory: report.json (every record), report.md (the summary
// table a researcher reads first) and the SVG plots (ratio per step, gamma/theta heat maps,
// retained mass against budget). Every file is written atomically (temp file, then rename).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/proofs_check/trace_checks.hpp"

namespace kvo {

std::string report_markdown(const TraceChecksResult& result, const nlohmann::json& meta);
// Other papers' claims beside the authors' words: per claim with records, its paper, the quoted
// statement, what kvoracle checks and, per instance, the verdict and the metric's median and worst.
std::vector<std::string> other_papers_lines(const std::vector<ClaimSummary>& summaries);
// The plots by file name.
std::vector<std::pair<std::string, std::string>> report_plots(const TraceChecksResult& result);
// Returns the paths written.
std::vector<std::string> write_report(const std::string& dir, const TraceChecksResult& result,
                                      const nlohmann::json& meta);

// Several traces in one run (`kvoracle verify a.safetensors b.safetensors --report DIR`): each
// trace's report goes to DIR/<name>/ and DIR/report.{md,json} hold a section per trace and, per
// claim and instance, how many traces and records hold, the worst case and where.
struct TraceReportEntry {
  std::string name;  // the trace's sub-directory, unique in the run (file stem)
  nlohmann::json meta;
  std::vector<ClaimSummary> summaries;
  long records = 0, theorem_failures = 0;
};
struct CrossTraceSummary {
  std::string id, variant;
  ClaimKind kind = ClaimKind::Finding;
  int traces = 0, traces_holding = 0;  // traces with the claim; where every record holds
  long records = 0, holding = 0;
  double worst = 0.0;
  std::string where;  // "<trace>: layer L head H step i"
};
std::vector<CrossTraceSummary> cross_trace_summary(const std::vector<TraceReportEntry>& traces);
std::string multi_report_markdown(const std::vector<TraceReportEntry>& traces);
nlohmann::json multi_report_json(const std::vector<TraceReportEntry>& traces);

}  // namespace kvo
