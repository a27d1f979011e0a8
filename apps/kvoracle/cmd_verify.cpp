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
#include "table.hpp"

namespace kvo::cli {

namespace {

// Options that name outputs: they do not change results, so a checkpoint does not compare them.
const std::vector<std::string> kOutputs = {"traces", "--report", "--json", "--plot", "--checkpoint"};

void print_claims(const std::vector<ClaimSummary>& sums) {
  Table t({"claim", "kind", "instance", "records", "paper/theorem holds", "metric", "worst", "where"});
  for (const auto& s : sums)
    t.row({s.id, to_string(s.kind), s.variant, std::to_string(s.records),
           std::to_string(s.holding) + "/" + std::to_string(s.records), claim_info(s.id).metric, fmt(s.worst),
           s.where});
  t.print(std::cout);
}

void print_cross_trace(const std::vector<TraceReportEntry>& traces) {
  Table t({"claim", "kind", "instance", "traces holding", "records holding", "metric", "worst", "where"});
  for (const auto& x : cross_trace_summary(traces))
    t.row({x.id, to_string(x.kind), x.variant, std::to_string(x.traces_holding) + "/" + std::to_string(x.traces),
           std::to_string(x.holding) + "/" + std::to_string(x.records), claim_info(x.id).metric, fmt(x.worst),
           x.where});
  t.print(std::cout);
}

}  // namespace

Runner add_verify(CLI::App& app, const Global& g) {
  auto* cmd =
      app.add_subcommand("verify", "run every checkable claim of the H2O theory on one or more traces, with a report");
  struct Args {
    std::vector<std::string> traces;
    std::string policies = join_policy_names(default_policies(PolicyListUse::Checks));
    std::string checks, report, json, plot, checkpoint;
    std::string sweep = sweep_text(TraceChecksOptions{}.sweep);
    RunArgs run;
    TraceChecksOptions o;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("traces", a->traces, "trace files (.safetensors) or directories of them")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--policies", a->policies, "comma-separated policies to replay and check")->capture_default_str();
  cmd->add_option("--checks", a->checks, "comma-separated check ids (" + trace_check_ids() + "); default: all");
  cmd->add_option("--report", a->report,
                  "write report.json, report.md and the SVG plots into this directory (several traces: a "
                  "sub-directory each and a summary across them)");
  cmd->add_option("--json", a->json, "also write report.json to this path");
  cmd->add_option("--plot", a->plot, "also write the ratio plot (SVG) to this path (one trace)");
  cmd->add_option("--checkpoint", a->checkpoint,
                  "store each finished unit in this directory; a rerun with the same arguments resumes from it");
  cmd->add_option("--sweep", a->sweep, "budgets (fractions of n) of the retained-mass plot; 'none' to skip")
      ->capture_default_str();
  for (const CheckSizeEntry& e : check_size_table())  // the one table of the checks' sizes
    cmd->add_option(std::string(e.flag), a->o.*e.field, std::string(e.help))->capture_default_str();
  add_run_options(cmd, a->run);
  return [a, &g, cmd] {
    TraceChecksOptions checks = a->o;
    checks.policies = parse_policy_list(a->policies);
    checks.sweep = parse_sweep(a->sweep);
    for (const auto& c : split_list(a->checks, "checks")) checks.checks.insert(c);
    const VerifyRequest req{a->traces, std::move(checks), a->run.options(), a->report, a->json, a->plot, false};
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
    if (!r.several) {
      std::cout << '\n';
      print_claims(r.traces.front().summaries);
      const nlohmann::json& meta = r.traces.front().meta;
      if (const auto it = meta.find("not_applicable"); it != meta.end())
        for (const auto& [id, why] : it->items())
          std::cout << id << ": not applicable (" << why.get<std::string>() << ")\n";
      std::cout << "\nTheorem checks: "
                << (r.theorem_failures == 0 ? "all hold"
                                            : std::to_string(r.theorem_failures) + " FAIL (a bug in kvoracle)")
                << "; findings and defects are measurements of the paper's claims, not pass/fail.\n";
      if (!a->report.empty()) std::cout << "report: " << a->report << "/report.md (" << r.report_files << " files)\n";
    } else {
      std::cout << "\nAcross " << r.traces.size() << " traces:\n\n";
      print_cross_trace(r.traces);
      std::cout << "\nTheorem checks: "
                << (r.theorem_failures == 0 ? "all hold on every trace"
                                            : std::to_string(r.theorem_failures) + " FAIL (a bug in kvoracle)")
                << "; findings and defects are measurements of the paper's claims, not pass/fail.\n";
      if (!a->report.empty()) std::cout << "report: " << a->report << "/report.md (" << r.report_files << " traces)\n";
    }
    if (!a->json.empty()) std::cout << "results: " << a->json << '\n';
    if (!a->plot.empty()) std::cout << "plot: " << a->plot << '\n';
    return r.theorem_failures == 0 ? 0 : 1;
  };
}

}  // namespace kvo::cli
