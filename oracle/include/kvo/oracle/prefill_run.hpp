// The exact prefill optimum against kvpress's presses over a whole trace: `kvoracle oracle
// prefill` as a library call. Every press at every compression ratio on every chosen layer and KV
// head, with per-(press, ratio) means over the cache units.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/core/field_schema.hpp"
#include "kvo/core/press.hpp"
#include "kvo/core/trace.hpp"
#include "kvo/oracle/prefill_oracle.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

// Every press of a comma-separated list ("all": every press) at every ratio, each ratio in
// [0, 1) (kvpress's compression_ratio: the fraction removed); `defaults` carries the parameters.
std::vector<PressOptions> press_grid(const std::string& presses, const std::vector<double>& ratios,
                                     const PressOptions& defaults = {});

struct PrefillOracleRequest {
  int prompt_len = 0;  // P: the prompt compressed once; queries P..n-1 follow
  std::string presses = "all";
  std::vector<double> ratios = {0.5, 0.8, 0.9};
  PressOptions press;           // press parameters (window_size, kernel_size, ...), kvpress's defaults
  bool output_fidelity = true;  // each set's attention-output error and the output bound
  std::vector<int> layers;      // empty: all
  int threads = 0;
  std::function<void()> on_layer;  // progress: once per finished layer (any thread)

  // kvo::Error naming the option, before any work: prompt_len outside [1, n - 1], an unknown
  // press, a ratio outside [0, 1), a layer the trace lacks, a press the trace cannot serve.
  void validate(const Trace& trace) const;
  static const Schema<PrefillOracleRequest>& schema();  // every field once: JSON, CLI flags, Python keywords
  nlohmann::json to_json() const;                       // every field but the hook; the press parameters by name
  static PrefillOracleRequest from_json(const nlohmann::json& j);
};

// Means over the cache units (layer, KV head) of one press at one ratio.
struct PrefillPressSummary {
  PressId press = PressId::SnapKV;
  double compression_ratio = 0.0;
  long units = 0;
  double mean_k = 0.0, fraction = 0.0, overlap = 0.0, share = 0.0, optimum_share = 0.0;
  double worst = 2.0;  // the lowest fraction of the optimum, at `where`
  std::string where;
  double output_error = 0.0, mass_optimum_error = 0.0, bound_optimum_error = 0.0;  // per following query
};

struct PrefillOracleResult {
  int prompt_len = 0, following = 0, kv_heads = 0;
  std::vector<int> layers;
  bool fidelity = false;                     // output errors measured (every chosen layer has values)
  std::vector<PressVsOptimum> rows;          // layer-major, then as compare_presses orders them
  std::vector<PrefillPressSummary> summary;  // in the request's (press, ratio) order
  nlohmann::json records() const;            // one JSON object per row
  // What `oracle prefill --json` writes: the trace's name, prompt_len, following_queries, records.
  nlohmann::json to_json(const std::string& trace) const;
  // What `oracle prefill` shows (oracle_reports.cpp): each (press, ratio)'s means against the
  // optimum, and its output errors beside the two optima's when measured.
  Report report(const PrefillOracleRequest& request, const std::string& trace) const;
};

PrefillOracleResult run_prefill_oracle(const Trace& trace, const PrefillOracleRequest& request);

}  // namespace kvo
