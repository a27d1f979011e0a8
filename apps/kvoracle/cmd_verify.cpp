// kvoracle verify: every checkable claim of the H2O theory (C1-C27) and the defects of the published
// text (D1-D11) on one or more traces, with a report directory. Exit 1 when a theorem check fails (a
// kvoracle bug); findings and defects are measurements and never fail the command. The work units
// go to every MPI rank under mpirun/srun; --checkpoint makes a run resumable.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "distributed.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/proofs_check/report_writer.hpp"
#include "kvo/proofs_check/trace_checks.hpp"
#include "kvo/proofs_check/trace_set.hpp"
#include "kvo/proofs_check/verify_run.hpp"
#include "kvo/scaleout/rank_team.hpp"
#include "options.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {

namespace {

// Options that name outputs: they do not change results, so a checkpoint does not compare them.
const std::vector<std::string> kOutputs = {"traces", "--report", "--json", "--plot", "--checkpoint"};

}  // namespace

Runner add_verify(CLI::App& app, const Global& g) {
  auto* cmd =
      app.add_subcommand("verify", "run every checkable claim of the H2O theory on one or more traces, with a report");
  struct Args {
    std::vector<std::string> traces;
    std::string checkpoint;
    RequestFlags<VerifyRequest> request;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("traces", a->traces, "trace files (.safetensors) or directories of them")
      ->required()
      ->check(CLI::ExistingPath);
  a->request.add(cmd);
  cmd->add_option("--checkpoint", a->checkpoint,
                  "store each finished unit in this directory; a rerun with the same arguments resumes from it");
  return [a, &g, cmd] {
    VerifyRequest req = a->request.request();
    req.traces = a->traces;
    req.validate();

    const auto checkpoint = open_checkpoint(a->checkpoint, cmd, kOutputs, expand_trace_paths(a->traces));
    const scaleout::RankTeam team(g.threads, !g.quiet, checkpoint.get());
    const std::optional<VerifyResult> result = run_verify(req, team, [](const VerifiedTrace& v) {
      std::cout << "kvoracle verify " << v.path << ": n = " << v.trace->n_tokens << ", " << v.trace->n_layers
                << " layers x " << v.trace->n_heads << " heads, budget " << v.result->budget << ", "
                << v.result->report.records().size() << " records\n";
    });
    if (!result) return 0;  // another rank: rank 0 holds the results
    const VerifyResult& r = *result;
    std::cout << '\n' << r.report().text();
    if (!req.report_dir.empty())
      std::cout << "report: " << req.report_dir << "/report.md (" << r.report_files
                << (r.several ? " traces)\n" : " files)\n");
    if (!req.json_path.empty()) std::cout << "results: " << req.json_path << '\n';
    if (!req.plot_path.empty()) std::cout << "plot: " << req.plot_path << '\n';
    return r.theorem_failures == 0 ? 0 : 1;
  };
}

}  // namespace kvo::cli
