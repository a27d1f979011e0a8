#include "cmd_contract.hpp"

#include <memory>
#include <string>

#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/contract_run.hpp"
#include "report_output.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {
namespace {

struct ContractArgs {
  std::string trace, json, plot;
  RequestFlags<ContractRequest> request;
};

int run_contract_command(const ContractArgs& a, const Global& g) {
  ContractRequest req = a.request.request();
  req.threads = g.threads;
  req.validate();
  const Trace tr = read_trace(a.trace);
  const ContractResult res = run_contract(tr, req, a.trace);
  print_report(res.report(), a.plot, a.json, [&] { return res.to_json().dump(1) + "\n"; });
  return 0;
}

}  // namespace

ContractCommand add_contract(CLI::App* oracle, const Global& g) {
  auto a = std::make_shared<ContractArgs>();
  CLI::App* cmd = oracle->add_subcommand(
      "contract",
      "the exact optimum under an engine's eviction contract (TensorRT-LLM, OpenVINO GenAI, llama.cpp, DMS, "
      "kvpress's DecodingPress, or kvoracle's own fields), its price against per-head sets, and each policy "
      "obeying it");
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  a->request.add(cmd);
  cmd->get_option("--contract")->required();
  cmd->add_option("--json", a->json, "write the rows and the contract as JSON");
  cmd->add_option("--plot", a->plot, "write an SVG plot of each row's share of the per-head optimum");
  return {cmd, [a, &g] { return run_contract_command(*a, g); }};
}

}  // namespace kvo::cli
