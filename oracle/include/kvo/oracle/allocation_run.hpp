// `kvoracle oracle allocation` as one library call: the request's protocol chooses the shared-budget
// optimum (prefill compression, or decoding eviction and periodic compression), and the result
// renders and writes itself the same way whichever it was.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "kvo/oracle/shared_decoding.hpp"
#include "kvo/oracle/shared_prefill.hpp"
#include "kvo/report/report.hpp"

namespace kvo {

struct AllocationResult {
  std::variant<SharedPrefillResult, SharedDecodingResult> rows;  // by the request's protocol

  // The `--json` file: the rows with each unit's slots (`trace` names the trace, "" for none) and
  // the request that made them.
  nlohmann::json to_json(const AllocationRequest& request, const std::string& trace) const;
  Report report(const AllocationRequest& request, const std::string& trace) const;
};

// run_shared_prefill or run_shared_decoding, as `request.protocol` says.
AllocationResult run_allocation(const Trace& trace, const AllocationRequest& request);

}  // namespace kvo
