#include "kvo/oracle/allocation_run.hpp"

namespace kvo {

AllocationResult run_allocation(const Trace& trace, const AllocationRequest& request) {
  if (request.protocol == AllocationProtocol::Decoding) return {run_shared_decoding(trace, request)};
  return {run_shared_prefill(trace, request)};
}

nlohmann::json AllocationResult::to_json(const AllocationRequest& request, const std::string& trace) const {
  nlohmann::json j = std::visit([&](const auto& r) { return r.to_json(trace); }, rows);
  j["request"] = request.to_json();
  return j;
}

Report AllocationResult::report(const AllocationRequest& request, const std::string& trace) const {
  return std::visit([&](const auto& r) { return r.report(request, trace); }, rows);
}

}  // namespace kvo
