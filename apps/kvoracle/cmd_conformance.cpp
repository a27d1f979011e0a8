// `kvoracle conformance`: golden eviction decisions of kvoracle's policies (golden), and another
// implementation's decisions checked against them (check).
#include <iostream>
#include <memory>
#include <string>

#include "commands.hpp"
#include "kvo/conformance/check.hpp"
#include "kvo/conformance/golden.hpp"
#include "kvo/conformance/tie_trace.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/trace_io.hpp"
#include "report_output.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {
namespace {

// The exit status of a check that ran and found a departure (errors exit 1, usage errors 2).
constexpr int kDeparts = 3;

struct GoldenArgs {
  std::string trace, output, trace_output;
  std::string kit_trace = "tie";  // the kit's trace when no file is given: tie or press
  int prompt = 0;                 // the tie trace's prompt
  RequestFlags<conformance::GoldenRequest> request;
};

int run_golden(const GoldenArgs& a, const Global& g) {
  conformance::GoldenRequest req = a.request.request();
  req.threads = g.threads;
  req.validate();
  require(a.trace.empty() || a.prompt == 0, "--prompt: a trace file brings its own prompt");
  require(a.kit_trace == "tie" || a.prompt == 0, "--prompt: the press trace is all prompt");
  const bool press = a.kit_trace == "press";
  const Trace tr = !a.trace.empty() ? read_trace(a.trace)
                   : press          ? conformance::press_tie_trace({})
                                    : conformance::tie_trace({.prompt_len = a.prompt});
  const std::string name = !a.trace.empty() ? a.trace
                           : press
                               ? std::string("press-trace (kvoracle conformance, seed 0)")
                               : "tie-trace (kvoracle conformance, seed 0, prompt " + std::to_string(a.prompt) + ")";
  const conformance::GoldenFile golden = conformance::make_golden(tr, req, name);
  if (!a.trace_output.empty()) write_trace(a.trace_output, tr);
  write_file_atomic(a.output, golden.to_json().dump(1) + "\n");
  std::cout << "wrote " << a.output << ": " << golden.cases.size() << " cases on " << golden.layers << " layers x "
            << golden.kv_heads << " KV heads x " << golden.n << " steps\n";
  return 0;
}

struct CheckArgs {
  std::string golden, decisions, json;
  double tie_tolerance = conformance::CheckOptions{}.tie_tolerance;
};

int run_check(const CheckArgs& a) {
  const conformance::GoldenFile golden = conformance::read_golden(a.golden);
  const std::vector<conformance::Decision> decisions = conformance::read_decisions(a.decisions);
  require(!decisions.empty(), "decisions: " + a.decisions + " holds no decision");
  const conformance::ConformanceResult r =
      conformance::check_conformance(golden, decisions, {.tie_tolerance = a.tie_tolerance}, a.golden);
  print_report(r.report(), "", a.json, [&] { return r.to_json().dump(1) + "\n"; });
  return r.conforms() ? 0 : kDeparts;
}

}  // namespace

Runner add_conformance(CLI::App& app, const Global& g) {
  CLI::App* cmd = app.add_subcommand(
      "conformance", "golden eviction decisions, and another implementation's decisions checked against them");
  cmd->require_subcommand(1);
  auto ga = std::make_shared<GoldenArgs>();
  CLI::App* golden = cmd->add_subcommand(
      "golden",
      "replay kvoracle's policies (or run kvpress's presses) on a small trace and write every step's kept set, "
      "evictions and scores");
  golden->add_option("trace", ga->trace, "trace file (.safetensors; default: the kit's tie trace)")
      ->check(CLI::ExistingFile);
  ga->request.add(golden);
  golden->add_option("--output,-o", ga->output, "the golden file to write (JSON)")->required();
  golden
      ->add_option("--kit-trace", ga->kit_trace,
                   "the kit's trace when no file is given: tie (dense attention, tied pairs; policies) or press "
                   "(q, k, v with repeated keys, all prompt; presses)")
      ->check(CLI::IsMember({"tie", "press"}));
  golden->add_option("--prompt", ga->prompt, "the tie trace's prompt: tokens held in full, then cut to the budget once")
      ->check(CLI::NonNegativeNumber);
  golden->add_option("--trace-output", ga->trace_output, "also write the trace the file was made on (.safetensors)");
  auto ca = std::make_shared<CheckArgs>();
  CLI::App* check = cmd->add_subcommand(
      "check",
      "the first step, layer and KV head where decisions (JSON Lines) depart from a golden file; exit 3 when "
      "any case departs");
  check->add_option("golden", ca->golden, "golden file (JSON)")->required()->check(CLI::ExistingFile);
  check->add_option("decisions", ca->decisions, "decisions, one JSON object per line")
      ->required()
      ->check(CLI::ExistingFile);
  check->add_option("--tie-tolerance", ca->tie_tolerance, "relative score difference counted as a near tie")
      ->check(CLI::NonNegativeNumber);
  check->add_option("--json", ca->json, "write the verdicts as JSON");
  return [cmd, golden, ga, ca, &g] { return golden->parsed() ? run_golden(*ga, g) : run_check(*ca); };
}

}  // namespace kvo::cli
