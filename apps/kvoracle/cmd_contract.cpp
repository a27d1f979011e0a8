#include "cmd_contract.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "distributed.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/contract_run.hpp"
#include "report_output.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {
namespace {

struct ContractArgs {
  std::string trace, json, plot, checkpoint;
  RequestFlags<ContractRequest> request;
};

// The rows go to every MPI rank under mpirun/srun; --checkpoint makes the run resumable.
int run_contract_command(const ContractArgs& a, const Global& g, const CLI::App* cmd) {
  ContractRequest req = a.request.request();
  req.threads = g.threads;
  req.validate();
  // The checkpoint's identity holds the trace's and every contract file's sha256: an edited
  // contract under the same path is refused before any work.
  std::vector<std::string> inputs = {a.trace};
  for (const std::string& c : req.contracts) {
    std::error_code not_a_file;  // JSON text given inline: its text is in the arguments
    if (std::filesystem::is_regular_file(c, not_a_file)) inputs.push_back(c);
  }
  const auto checkpoint = open_checkpoint(a.checkpoint, cmd, {"trace", "--json", "--plot", "--checkpoint"}, inputs);
  const scaleout::RankTeam team(g.threads, !g.quiet, checkpoint.get());
  Trace tr;
  team.together([&] { tr = read_trace(a.trace); });  // every rank reads; an error all ranks hit is printed once
  const std::optional<ContractResult> res = run_contract(tr, req, team, a.trace);
  if (!res) return 0;  // another rank: rank 0 holds the result
  print_report(res->report(), a.plot, a.json, [&] { return res->to_json().dump(1) + "\n"; });
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
  cmd->add_option("--checkpoint", a->checkpoint,
                  "store each finished row in this directory; a rerun with the same arguments resumes");
  return {cmd, [a, &g, cmd] { return run_contract_command(*a, g, cmd); }};
}

}  // namespace kvo::cli
