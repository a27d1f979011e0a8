// The traces of one verify run over several files: the paths named (files as given, directories
// as their *.safetensors in name order), a unique report name for each, and the report directory
// assembled in a staging folder so that a failed run leaves no half of a report.
#pragma once
#include <string>
#include <vector>

#include "kvo/proofs_check/report_writer.hpp"

namespace kvo {

// kvo::Error for a directory that holds no .safetensors file.
std::vector<std::string> expand_trace_paths(const std::vector<std::string>& args);
// Each trace's sub-directory in a several-trace report: the file stem, made unique ("a", "a-2").
std::vector<std::string> trace_report_names(const std::vector<std::string>& paths);

// DIR/.kvoracle-partial holds each trace's report (write_report(stage(name), ...)); commit()
// moves them into DIR and writes DIR/report.{json,md} across the traces. Destroying an
// uncommitted report removes the staging folder.
class StagedReport {
 public:
  explicit StagedReport(std::string dir);
  ~StagedReport();
  StagedReport(const StagedReport&) = delete;
  StagedReport& operator=(const StagedReport&) = delete;
  std::string stage(const std::string& name) const;
  void commit(const std::vector<TraceReportEntry>& traces);

 private:
  std::string dir_, stage_;
};

}  // namespace kvo
