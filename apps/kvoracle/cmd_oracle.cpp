// kvoracle oracle: the exact static optimum max_{|S| <= k, S ⊆ [i]} f_i(S) per step and head.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cmd_allocation.hpp"
#include "commands.hpp"
#include "distributed.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/static_run.hpp"
#include "kvo/proofs_check/offline_run.hpp"
#include "options.hpp"
#include "press_options.hpp"
#include "table.hpp"

namespace kvo::cli {
namespace {

// The heads go to every MPI rank under mpirun/srun; --checkpoint makes the run resumable.
template <class Args>
int run_offline(const Args& a, const Global& g, const CLI::App* cmd) {
  OfflineOracleRequest req;
  req.trace = a.trace;
  req.run = a.run.options();
  req.policies = parse_policy_list(a.policies);
  req.forced_window = a.forced_window;
  req.json_path = a.json;
  req.validate();
  const auto checkpoint = open_checkpoint(a.checkpoint, cmd, {"trace", "--json", "--out", "--checkpoint"}, {a.trace});
  const scaleout::RankTeam team(g.threads, !g.quiet, checkpoint.get());
  const std::optional<OfflineOracleResult> result = run_offline_oracle(req, team);
  if (!result) return 0;  // another rank: rank 0 holds the result
  const OfflineOracleResult& r = *result;
  const double nh = static_cast<double>(r.heads.size());
  std::cout << "offline optimum of the retained dense mass on " << a.trace << " (n = " << r.n_tokens << ", budget "
            << r.budget << ", forced window " << a.forced_window << ", " << r.heads.size() << " heads)\n"
            << "mean per head: OPT_dyn = " << fmt(r.opt_dyn_sum / nh) << ", sum_i opt_i = " << fmt(r.static_sum / nh)
            << ", OPT_dyn / sum_i opt_i = " << fmt(r.opt_dyn_sum / r.static_sum) << "\n";
  Table t({"policy", "nested", "mean value", "mean ratio", "worst head ratio", "max excess over OPT_dyn", "ordering"});
  long unchecked = 0;
  for (const OfflinePolicySummary& p : r.policies) {
    unchecked += p.outside.empty() ? 0 : 1;
    t.row({p.policy, p.nested ? "yes" : "no", fmt(p.mean_value), fmt(p.mean_ratio), fmt(p.worst_ratio),
           p.max_excess > 0 ? fmt(p.max_excess) : "-", p.outside.empty() ? "checked" : "not checked: " + p.outside});
  }
  t.print(std::cout);
  std::cout << "ordering policy <= OPT_dyn <= sum_i opt_i (for the "
            << r.policies.size() - static_cast<size_t>(unchecked)
            << " policies inside OPT_dyn's problem) and dual certificates: " << r.violations
            << (r.violations ? " violations [FAILS: bug in kvoracle]" : " violations [holds]") << '\n';
  if (!a.json.empty()) std::cout << "results: " << a.json << '\n';
  return r.violations ? 1 : 0;
}

}  // namespace

namespace {

// The options of the three oracles; `kvoracle oracle static|offline|prefill` each register their
// part, the older one-command form (`oracle TRACE [--offline | --prefill P]`) registers all.
struct OracleArgs {
  std::string trace, out, json, checkpoint;
  RunArgs run;
  int every = 1;
  long long node_limit = 200000;
  std::string policies = join_policy_names(default_policies(PolicyListUse::Checks));
  int forced_window = 0;
  int prefill = 0;  // the prompt length P
  bool offline = false;
  std::string layers;
  PressArgs press;
  OracleArgs() { run.values.objective = "dense-acc"; }  // the static objective; also greedy's offline
};

void add_trace(CLI::App* c, OracleArgs& a, bool required) {
  auto* opt = c->add_option("trace", a.trace, "trace file (.safetensors)")->check(CLI::ExistingFile);
  if (required) opt->required();
}

void add_static_options(CLI::App* c, OracleArgs& a) {
  c->add_option("--every", a.every, "solve every N-th step")->capture_default_str()->check(CLI::PositiveNumber);
  c->add_option("--node-limit", a.node_limit,
                "fl: branch-and-bound nodes per solve; past it the record is inexact with bounds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--out,-o", a.out, "per-step optima as JSON Lines");
}

void add_offline_options(CLI::App* c, OracleArgs& a, const std::string& when) {
  c->add_option("--policies", a.policies, when + "comma-separated policies")->capture_default_str();
  c->add_option("--forced-window", a.forced_window, when + "last r tokens forced into OPT's caches")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_option("--checkpoint", a.checkpoint,
                when + "store each finished head in this directory; a rerun with the same arguments resumes");
}

int run_static(const OracleArgs& a, const Global& g) {
  require(a.checkpoint.empty(), "--checkpoint needs --offline (the static oracle is not resumable)");
  StaticOracleRequest req;
  req.run = a.run.options();
  req.every = a.every;
  req.node_limit = a.node_limit;
  req.threads = g.threads;
  req.validate();
  const Trace tr = read_trace(a.trace);
  const RunConfig run = req.run.build(PolicyId::Full, &tr);  // the heads, for the bar's size
  Progress bar("oracle", static_cast<long>(run.chosen_layers(tr.n_layers).size() * run.chosen_heads(tr.n_heads).size()),
               !g.quiet);
  req.on_head = [&] { bar.tick(); };
  const StaticOracleResult res = run_static_oracle(tr, req);
  bar.finish();
  if (!a.out.empty()) {
    AtomicFile f(a.out);
    for (const auto& rec : res.records()) f.stream() << rec.dump() << '\n';
    f.commit();
  }
  std::map<int, std::tuple<int, long, double, int>> per_layer;  // solves, inexact, mean final value, heads
  for (const StaticOracleHead& head : res.heads) {
    auto& [solves, inexact, final_value, nh] = per_layer[head.layer];
    for (const auto& s : head.solves) {
      ++solves;
      inexact += s.solution.exact ? 0 : 1;
    }
    if (!head.solves.empty()) final_value += head.solves.back().solution.value;
    ++nh;
  }
  std::cout << "static optimum of " << res.objective << " on " << a.trace << " (budget " << res.budget << ")\n";
  Table t({"layer", "heads", "solves", "inexact", "mean OPT at the last step"});
  for (const auto& [l, v] : per_layer) {
    const auto& [solves, inexact, final_value, nh] = v;
    t.row({std::to_string(l), std::to_string(nh), std::to_string(solves), std::to_string(inexact),
           fmt(final_value / nh)});
  }
  t.print(std::cout);
  if (!a.out.empty()) std::cout << "per-step optima: " << a.out << '\n';
  return 0;
}

int run_prefill(const OracleArgs& a, const Global& g, const std::vector<int>& layers) {
  return run_prefill_oracle({a.trace, a.json, a.prefill, layers, a.press}, g);
}

}  // namespace

Runner add_oracle(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand(
      "oracle",
      "exact optima: `oracle static` per step and head, `oracle offline` over the whole sequence with each policy's "
      "competitive ratio, `oracle prefill` of compressing a prompt once against kvpress's presses, `oracle allocation` "
      "of the same with budgets shared across heads and layers");
  cmd->require_subcommand(0, 1);
  // The one-command form: oracle TRACE [--offline | --prefill P] (documented; the modes below are
  // the same runs).
  auto a = std::make_shared<OracleArgs>();
  add_trace(cmd, *a, false);
  add_static_options(cmd, *a);
  cmd->add_flag("--offline,--dynamic", a->offline,
                "the same as `oracle offline`: exact offline optimum of the nested problem and each policy's "
                "competitive ratio (--dynamic: the old name)");
  add_offline_options(cmd, *a, "--offline: ");
  cmd->add_option("--json", a->json, "--offline, --prefill: write the results as JSON");
  cmd->add_option("--prefill", a->prefill, "prompt length P: the same as `oracle prefill --prompt-len P`")
      ->check(CLI::PositiveNumber);
  add_press_options(cmd, a->press);
  add_run_options(cmd,
                  a->run);  // --objective (dense-acc, mass or fl here), --concave and --window: the static objective

  auto st = std::make_shared<OracleArgs>();
  auto* st_cmd = cmd->add_subcommand("static", "exact static optimum max_{|S| <= k, S ⊆ [i]} f_i(S) per step and head");
  add_trace(st_cmd, *st, true);
  add_static_options(st_cmd, *st);
  add_run_options(st_cmd, st->run);

  auto off = std::make_shared<OracleArgs>();
  auto* off_cmd = cmd->add_subcommand(
      "offline",
      "exact offline optimum of the nested problem (retained dense mass) and each policy's competitive ratio");
  add_trace(off_cmd, *off, true);
  add_offline_options(off_cmd, *off, "");
  off_cmd->add_option("--json", off->json, "write per-head results as JSON");
  add_run_options(off_cmd, off->run);

  auto pre = std::make_shared<OracleArgs>();
  auto* pre_cmd = cmd->add_subcommand(
      "prefill",
      "exact optimum of compressing the prompt once to k keys per KV head (the following queries' retained mass) "
      "and kvpress's presses against it");
  add_trace(pre_cmd, *pre, true);
  pre_cmd->add_option("--prompt-len", pre->prefill, "prompt length P")->required()->check(CLI::PositiveNumber);
  pre_cmd->add_option("--json", pre->json, "write the records as JSON");
  pre_cmd->add_option("--layers", pre->layers, "layers to run (default: all)");
  add_press_options(pre_cmd, pre->press);

  const AllocationCommand alloc = add_allocation(cmd, g);

  return [a, st, off, pre, &g, cmd, off_cmd, pre_cmd, st_cmd, alloc] {
    if (st_cmd->parsed()) return run_static(*st, g);
    if (alloc.cmd->parsed()) return alloc.run();
    if (off_cmd->parsed()) return run_offline(*off, g, off_cmd);
    if (pre_cmd->parsed()) return run_prefill(*pre, g, parse_int_list(pre->layers, "layers"));
    require(!a->trace.empty(), "oracle needs a trace (kvoracle oracle static|offline|prefill|allocation TRACE ...)");
    if (a->prefill > 0) {
      require(!a->offline && a->checkpoint.empty() && a->out.empty(),
              "--prefill takes --json for its records; it does not combine with --offline, --checkpoint or --out");
      return run_prefill(*a, g, a->run.options().layers);
    }
    if (a->offline) return run_offline(*a, g, cmd);
    return run_static(*a, g);
  };
}

}  // namespace kvo::cli
