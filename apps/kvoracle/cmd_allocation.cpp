#include "cmd_allocation.hpp"

#include <memory>
#include <string>

#include "kvo/core/progress.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/allocation_run.hpp"
#include "report_output.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {
namespace {

struct AllocationArgs {
  std::string trace, json, plot;
  RequestFlags<AllocationRequest> request;
};

int run_allocation(const AllocationArgs& a, const Global& g) {
  AllocationRequest req = a.request.request();
  req.threads = g.threads;
  const Trace tr = read_trace(a.trace);
  req.validate(tr);
  Progress bar("allocation", static_cast<long>(req.chosen_layers(tr).size()) * tr.n_kv_heads, !g.quiet);
  req.on_unit = [&bar] { bar.tick(); };
  const AllocationResult res = run_allocation(tr, req);
  bar.finish();
  print_report(res.report(req, a.trace), a.plot, a.json, [&] { return res.to_json(req, a.trace).dump(1) + "\n"; });
  return 0;
}

}  // namespace

AllocationCommand add_allocation(CLI::App* oracle, const Global& g) {
  auto a = std::make_shared<AllocationArgs>();
  CLI::App* cmd = oracle->add_subcommand(
      "allocation",
      "exact optima when KV heads and layers share one budget (per layer, layerwise, the whole model; floors, "
      "pages), against per-head budgets of the same total: compressing the prompt once (--protocol prefill), "
      "evicting at every step (--protocol decoding) or compressing every N steps (--protocol decoding --interval)");
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  a->request.add(cmd);
  cmd->add_option("--json", a->json, "write the rows (with each unit's slots) and the request as JSON");
  cmd->add_option("--plot", a->plot, "write an SVG plot of each scope's gain against the budget");
  return {cmd, [a, &g] { return run_allocation(*a, g); }};
}

}  // namespace kvo::cli
