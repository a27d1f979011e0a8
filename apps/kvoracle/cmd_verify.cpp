// kvoracle verify: every checkable claim of the H2O theory (C1-C27) and the defects of the published
// text (D1-D11) on one or more traces, with a report directory. Exit 1 when a theorem check fails (a
// kvoracle bug); findings and defects are measurements and never fail the command. The work units
// go to every MPI rank under mpirun/srun; --checkpoint makes a run resumable.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "distributed.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/proofs_check/report_writer.hpp"
#include "kvo/proofs_check/trace_checks.hpp"
#include "kvo/proofs_check/trace_set.hpp"
#include "options.hpp"
#include "table.hpp"

namespace kvo::cli {

namespace {

// Options that name outputs: they do not change results, so a checkpoint does not compare them.
const std::vector<std::string> kOutputs = {"traces", "--report", "--json", "--plot", "--checkpoint"};

// The library's default sweep as the option's text ("0.05,0.1,0.2,0.3,0.5").
std::string default_sweep() {
  std::string s;
  for (double b : TraceChecksOptions{}.sweep) {
    std::ostringstream one;
    one << b;
    s += (s.empty() ? "" : ",") + one.str();
  }
  return s;
}

void print_claims(const std::vector<ClaimSummary>& sums) {
  Table t({"claim", "kind", "instance", "records", "paper/theorem holds", "worst", "where"});
  for (const auto& s : sums)
    t.row({s.id, to_string(s.kind), s.variant, std::to_string(s.records),
           std::to_string(s.holding) + "/" + std::to_string(s.records), fmt(s.worst), s.where});
  t.print(std::cout);
}

void print_cross_trace(const std::vector<TraceReportEntry>& traces) {
  Table t({"claim", "kind", "instance", "traces holding", "records holding", "worst", "where"});
  for (const auto& x : cross_trace_summary(traces))
    t.row({x.id, to_string(x.kind), x.variant, std::to_string(x.traces_holding) + "/" + std::to_string(x.traces),
           std::to_string(x.holding) + "/" + std::to_string(x.records), fmt(x.worst), x.where});
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
    std::string sweep = default_sweep();
    RunArgs run;
    TraceChecksOptions o;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("traces", a->traces, "trace files (.safetensors) or directories of them")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("--policies", a->policies, "comma-separated policies to replay and check")->capture_default_str();
  cmd->add_option("--checks", a->checks, "comma-separated check ids (C1..C27, D1..D11); default: all");
  cmd->add_option("--report", a->report,
                  "write report.json, report.md and the SVG plots into this directory (several traces: a "
                  "sub-directory each and a summary across them)");
  cmd->add_option("--json", a->json, "also write report.json to this path");
  cmd->add_option("--plot", a->plot, "also write the ratio plot (SVG) to this path (one trace)");
  cmd->add_option("--checkpoint", a->checkpoint,
                  "store each finished unit in this directory; a rerun with the same arguments resumes from it");
  cmd->add_option("--samples", a->o.samples, "sampled sets per submodularity scan (C5, C6, C12)")
      ->capture_default_str();
  cmd->add_option("--sampled-steps", a->o.sampled_steps, "steps per head for the brute-force checks")
      ->capture_default_str();
  cmd->add_option("--ground", a->o.ground, "ground-set size of the brute-force checks (<= 16)")->capture_default_str();
  cmd->add_option("--small-k", a->o.small_k, "budget of the brute-force checks")->capture_default_str();
  cmd->add_option("--sweep", a->sweep, "budgets (fractions of n) of the retained-mass plot; 'none' to skip")
      ->capture_default_str();
  cmd->add_option("--sweep-heads", a->o.sweep_heads, "heads per layer in the budget sweep")->capture_default_str();
  cmd->add_option("--offline-tokens", a->o.offline_tokens,
                  "C19, D10 and the sweep's OPT_dyn solve the offline optimum on the first N steps")
      ->capture_default_str();
  cmd->add_option("--loss-random", a->o.loss_random, "random instances of the loss/Hessian checks")
      ->capture_default_str();
  add_run_options(cmd, a->run);
  return [a, &g, cmd] {
    require(a->run.options().gqa == "query", "verify checks one cache per query head: gqa must be query");
    std::vector<double> sweep;
    if (a->sweep != "none")
      for (const auto& item : split_list(a->sweep, "sweep")) {
        const Amount b = Amount::parse(item);
        require(b.is_ratio, "sweep budgets must be fractions of n (0.1 or 10%), not '" + item + "'");
        sweep.push_back(b.value);
      }
    TraceChecksOptions base = a->o;
    base.policies = parse_policy_list(a->policies);
    base.threads = g.threads;
    base.sweep = sweep;
    for (const auto& c : split_list(a->checks, "checks")) base.checks.insert(c);
    base.validate();
    const std::vector<std::string> paths = expand_trace_paths(a->traces);
    const bool several = paths.size() > 1;
    require(!several || a->plot.empty(), "--plot takes one trace; with several, --report draws every trace's plots");
    const std::vector<std::string> names = trace_report_names(paths);

    // Rank 0 opens the checkpoint and the report's staging directory; every rank learns a failure.
    const auto checkpoint = open_checkpoint(a->checkpoint, cmd, kOutputs, paths);
    std::unique_ptr<StagedReport> staged;
    on_every_rank([&] {
      if (scaleout::Team::world().root() && several && !a->report.empty())
        staged = std::make_unique<StagedReport>(a->report);
    });

    std::vector<TraceReportEntry> entries;
    std::vector<nlohmann::json> jsons;
    long fails = 0;
    bool have_results = false;  // rank 0
    for (size_t t = 0; t < paths.size(); ++t) {
      Trace tr;
      TraceChecksOptions o = base;
      std::unique_ptr<TraceChecksPlan> plan;
      on_every_rank(  // a bad trace: one line from rank 0, every rank exits non-zero
          [&] {
            tr = read_trace(paths[t]);
            o.run = a->run.build(o.policies.front(), &tr);  // the plan validates every policy's parameters
            plan = std::make_unique<TraceChecksPlan>(tr, o);
          },
          several ? paths[t] : "");
      const std::optional<TraceChecksResult> result =
          run_plan(PrefixedPlan<TraceChecksResult>(*plan, "'" + paths[t] + "' "), "t" + std::to_string(t),
                   several ? "verify " + names[t] : "verify", g.threads, g.quiet, checkpoint.get());
      if (!result) continue;  // another rank: rank 0 holds the results
      have_results = true;
      const TraceChecksResult& res = *result;

      nlohmann::json meta = {
          {"trace", paths[t]},    {"n", tr.n_tokens},        {"layers", tr.n_layers},          {"heads", tr.n_heads},
          {"budget", res.budget}, {"policies", a->policies}, {"prompt_len", o.run.prompt_len}, {"seed", o.run.seed}};
      for (const char* key : {"model", "text_source", "model_sha256"})
        if (tr.metadata.count(key)) meta[key] = tr.metadata.at(key);
      std::cout << "kvoracle verify " << paths[t] << ": n = " << tr.n_tokens << ", " << tr.n_layers << " layers x "
                << tr.n_heads << " heads, budget " << res.budget << ", " << res.report.records().size() << " records\n";
      const long trace_fails = res.report.theorem_failures();
      fails += trace_fails;
      if (!several) {
        std::cout << '\n';
        print_claims(res.report.summaries());
        std::cout << "\nTheorem checks: "
                  << (fails == 0 ? "all hold" : std::to_string(fails) + " FAIL (a bug in kvoracle)")
                  << "; findings and defects are measurements of the paper's claims, not pass/fail.\n";
        if (!a->report.empty()) {
          const auto files = write_report(a->report, res, meta);
          std::cout << "report: " << a->report << "/report.md (" << files.size() << " files)\n";
        }
        if (!a->json.empty()) {
          write_file_atomic(a->json, res.report.to_json(meta).dump(1) + "\n");
          std::cout << "results: " << a->json << '\n';
        }
        if (!a->plot.empty()) {
          write_file_atomic(a->plot, report_plots(res).front().second);
          std::cout << "plot: " << a->plot << '\n';
        }
        continue;
      }
      entries.push_back(
          {names[t], meta, res.report.summaries(), static_cast<long>(res.report.records().size()), trace_fails});
      if (staged) write_report(staged->stage(names[t]), res, meta);
      if (!a->json.empty()) jsons.push_back(res.report.to_json(meta));
    }
    if (!have_results) return 0;
    if (several) {
      std::cout << "\nAcross " << paths.size() << " traces:\n\n";
      print_cross_trace(entries);
      std::cout << "\nTheorem checks: "
                << (fails == 0 ? "all hold on every trace" : std::to_string(fails) + " FAIL (a bug in kvoracle)")
                << "; findings and defects are measurements of the paper's claims, not pass/fail.\n";
      if (staged) {
        staged->commit(entries);
        std::cout << "report: " << a->report << "/report.md (" << entries.size() << " traces)\n";
      }
      if (!a->json.empty()) {
        nlohmann::json j = multi_report_json(entries);
        j["reports"] = jsons;
        write_file_atomic(a->json, j.dump(1) + "\n");
        std::cout << "results: " << a->json << '\n';
      }
    }
    return fails == 0 ? 0 : 1;
  };
}

}  // namespace kvo::cli
