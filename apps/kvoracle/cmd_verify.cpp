// kvoracle verify: every checkable claim of the H2O theory (C1-C27) and the defects of the published
// text (D1-D11) on a trace, with a report directory. Exit 1 when a theorem check fails (a kvoracle
// bug); findings and defects are measurements and never fail the command.
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kvo/checks/report_writer.hpp"
#include "kvo/checks/trace_checks.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/trace_io.hpp"
#include "options.hpp"
#include "table.hpp"

namespace kvo::cli {

Runner add_verify(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("verify", "run every checkable claim of the H2O theory on a trace, with a report");
  struct Args {
    std::string trace, policies = join_policy_names(default_policies(PolicyListUse::Checks));
    std::string checks, report, json, plot;
    std::string sweep = "0.05,0.1,0.2,0.3,0.5";
    RunArgs run;
    TraceChecksOptions o;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--policies", a->policies, "comma-separated policies to replay and check")->capture_default_str();
  cmd->add_option("--checks", a->checks, "comma-separated check ids (C1..C27, D1..D11); default: all");
  cmd->add_option("--report", a->report, "write report.json, report.md and the SVG plots into this directory");
  cmd->add_option("--json", a->json, "also write report.json to this path");
  cmd->add_option("--plot", a->plot, "also write the ratio plot (SVG) to this path");
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
  return [a, &g] {
    require(a->run.gqa == "query", "verify checks one cache per query head: --gqa must be query");
    require(a->o.ground >= 2 && a->o.ground <= 16, "--ground must be in [2, 16]");
    require(a->o.small_k >= 1 && a->o.small_k < a->o.ground, "--small-k must be in [1, ground)");
    require(a->o.samples >= 1 && a->o.sampled_steps >= 1, "--samples and --sampled-steps must be >= 1");
    require(a->o.offline_tokens >= 2, "--offline-tokens must be >= 2");
    std::vector<double> sweep;
    if (a->sweep != "none")
      for (const auto& item : split_list(a->sweep)) {
        const Amount b = Amount::parse(item);
        require(b.is_ratio, "--sweep budgets must be fractions of n (0.1 or 10%), not '" + item + "'");
        sweep.push_back(b.value);
      }
    TraceChecksOptions o = a->o;
    o.policies = parse_policy_list(a->policies);
    const Trace tr = read_trace(a->trace);
    o.run = a->run.build(o.policies.front(), &tr);  // run_trace_checks validates every policy's parameters
    o.threads = g.threads;
    o.sweep = sweep;
    for (const auto& c : split_list(a->checks)) {
      claim_info(c);
      o.checks.insert(c);
    }
    Progress bar("verify", work_units(tr, o), !g.quiet);
    o.on_tick = [&bar] { bar.tick(); };
    const TraceChecksResult res = run_trace_checks(tr, o);
    bar.finish();

    nlohmann::json meta = {
        {"trace", a->trace},    {"n", tr.n_tokens},        {"layers", tr.n_layers},          {"heads", tr.n_heads},
        {"budget", res.budget}, {"policies", a->policies}, {"prompt_len", o.run.prompt_len}, {"seed", o.run.seed}};
    for (const char* key : {"model", "text_source", "model_sha256"})
      if (tr.metadata.count(key)) meta[key] = tr.metadata.at(key);
    std::cout << "kvoracle verify " << a->trace << ": n = " << tr.n_tokens << ", " << tr.n_layers << " layers x "
              << tr.n_heads << " heads, budget " << res.budget << ", " << res.report.records().size() << " records\n\n";
    Table t({"claim", "kind", "instance", "records", "paper/theorem holds", "worst", "where"});
    for (const auto& s : res.report.summaries())
      t.row({s.id, to_string(s.kind), s.variant, std::to_string(s.records),
             std::to_string(s.holding) + "/" + std::to_string(s.records), fmt(s.worst), s.where});
    t.print(std::cout);
    const long fails = res.report.theorem_failures();
    std::cout << "\nTheorem checks: " << (fails == 0 ? "all hold" : std::to_string(fails) + " FAIL (a bug in kvoracle)")
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
    return fails == 0 ? 0 : 1;
  };
}

}  // namespace kvo::cli
