// `kvoracle verify` as a library call: the claim checks on one or more trace files and their
// report. One trace: its report directory, report.json and ratio plot where asked. Several: a
// sub-directory per trace and a report across them, staged so that a failed run leaves none.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/run_options.hpp"
#include "kvo/core/trace.hpp"
#include "kvo/core/work_team.hpp"
#include "kvo/proofs_check/check_options.hpp"
#include "kvo/proofs_check/report_writer.hpp"
#include "kvo/proofs_check/trace_checks.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

// VerifyRequest's fields that are the checks' sizes (FieldInfo::use).
inline constexpr const char* kCheckSizeUse = "check size";

struct VerifyRequest {
  std::vector<std::string> traces;  // .safetensors files, or directories of them (name order)
  // Policies, check ids, sizes and the sweep; `checks.run` is built per trace from `run`, and
  // `checks.threads` / `checks.on_tick` are the team's.
  TraceChecksOptions checks;
  RunOptions run;             // prompt_len defaults to each trace's metadata
  std::string report_dir;     // report.json, report.md and SVG plots (several traces: one folder each)
  std::string json_path;      // report.json (several: every trace's and the summary) also here
  std::string plot_path;      // the ratio plot (SVG) also here; one trace only
  bool keep_reports = false;  // VerifyResult::reports holds each trace's report.json (as json_path does)

  // kvo::Error naming the option: no trace, gqa other than query, plot_path with several traces
  // (known only once directories are expanded: run_verify checks it again), checks.validate().
  void validate() const;
  // The checks of one trace (`checks` with `run` built for it); kvo::Error for what validate()
  // refuses but the traces (a call on one Trace object has none).
  TraceChecksOptions options(const Trace& trace) const;
  static const Schema<VerifyRequest>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;                // every field but the hooks
  static VerifyRequest from_json(const nlohmann::json& j);
};

// One trace's checks, as the leader holds them when they are done.
struct VerifiedTrace {
  std::string path, name;  // the file and its report folder name (several traces)
  nlohmann::json meta;     // what the report records about the run (trace, n, budget, policies, ...)
  const Trace* trace = nullptr;
  const TraceChecksResult* result = nullptr;
  long theorem_failures = 0;
};

struct VerifyResult {
  bool several = false;                  // more than one trace (the report across them)
  std::vector<TraceReportEntry> traces;  // each trace's claim summaries, in order
  long theorem_failures = 0;             // over every trace: a kvoracle bug when not 0
  std::vector<nlohmann::json> reports;   // each trace's report.json, with keep_reports or json_path
  std::vector<std::string> written;      // what was written: the report's files (several: its folder), json, plot
  int report_files = 0;                  // files in the report folder (several: trace folders)
  // One trace: its report.json; several: the report across them with "reports" (when kept).
  nlohmann::json to_json() const;
  // What `kvoracle verify` shows after its runs: per claim and instance how many records (one
  // trace) or traces and records (several) hold, the worst metric and where; the claims that do not
  // apply, and whether every theorem check holds.
  Report report() const;
};

// One trace's entry of a verify result: `meta` with the checks asked for that the trace cannot
// answer under "not_applicable" (E3 without the trace's text), its summaries and failures.
TraceReportEntry verify_trace_entry(const std::string& name, nlohmann::json meta, const Trace& trace,
                                    const TraceChecksOptions& options, const TraceChecksResult& result);

// Runs the checks on every trace through `team` (its threads, its progress bars, its ranks) and
// writes the outputs the request names. `on_trace` runs on the leader after each trace. The
// result on the leader; nothing on the other members of an MPI team.

std::optional<VerifyResult> run_verify(const VerifyRequest& request, const WorkTeam& team = WorkTeam(),
                                       const std::function<void(const VerifiedTrace&)>& on_trace = {});

}  // namespace kvo
