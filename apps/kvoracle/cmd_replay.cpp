// kvoracle replay: runs one policy over a trace; per-step JSON Lines and a summary table. The heads
// go to every MPI rank under mpirun/srun. kvoracle score (also spelled `replay --device`): the greedy
// scorer, on rank 0 alone.
#include <chrono>
#include <iostream>

#include "commands.hpp"
#include "distributed.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/replay_run.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/gpu/score_run.hpp"
#include "kvo/report/table.hpp"
#include "options.hpp"
#include "schema_flags.hpp"

namespace kvo::cli {

namespace {

// kvoracle score (replay --device): the greedy scorer (CUDA or its CPU twin) for the H2O family.
int run_device_replay(ScoreRequest req, const std::string& trace, const std::string& out, const Global& g) {
  req.threads = g.threads;
  req.validate();
  const Trace tr = read_trace(trace);
  const std::vector<Budget> budgets = req.options(tr).budgets();
  const auto t0 = std::chrono::steady_clock::now();
  const ScorerResult r = run_score(tr, req);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!out.empty()) {
    AtomicFile f(out);
    write_score_records(f.stream(), tr, r, budgets);
    f.commit();
  }
  std::cout << score_report(r, budgets, req.policy, trace, tr.n_tokens).text();
  const double head_steps = static_cast<double>(r.units.size()) * tr.n_tokens;
  std::cout << fmt(sec, 3) << " s, " << fmt(head_steps / sec, 4) << " head-steps/s";
  if (r.kernel_seconds > 0) std::cout << " (kernel " << fmt(r.kernel_seconds, 3) << " s)";
  std::cout << '\n';
  if (!out.empty()) std::cout << "per-step records: " << out << '\n';
  return 0;
}

std::string scorer_policies() {
  return policy_names_where([](const PolicyTraits& t) { return t.scorer != ScorerVariant::None; });
}

}  // namespace

Runner add_score(CLI::App& app, const Global& g) {
  auto* cmd =
      app.add_subcommand("score", "the greedy scorer (" + scorer_policies() +
                                      ") over every head and several budgets in one pass, on the CPU twin or a GPU");
  struct Args {
    std::string trace, out;
    RequestFlags<ScoreRequest> request;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  a->request.add(cmd);
  cmd->add_option("--out,-o", a->out, "per-step kept and evicted keys as JSON Lines");
  return [a, &g] { return run_device_replay(a->request.request(), a->trace, a->out, g); };
}

Runner add_replay(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("replay", "replay an eviction policy over a trace");
  struct Args {
    std::string trace, out, device, budgets, checkpoint;
    RequestFlags<ReplayRequest> request;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  a->request.add(cmd);
  cmd->add_option("--out,-o", a->out, "per-step records as JSON Lines");
  cmd->add_option("--device", a->device,
                  "the same as `kvoracle score --device`: the greedy scorer (" + scorer_policies() +
                      ") on cpu (the twin), cuda, or auto");
  cmd->add_option("--budgets", a->budgets,
                  "with --device: several budget totals in one pass, e.g. 5%,10%,20% (replaces --budget)");
  cmd->add_option("--checkpoint", a->checkpoint,
                  "store each finished head in this directory; a rerun with the same arguments resumes from it");
  return [a, &g, cmd] {
    if (!a->device.empty()) {  // the greedy scorer: rank 0 alone (threads or GPU)
      const ReplayRequest req = a->request.request();
      require(!req.record_probs, "--probs is not available with --device (the scorer keeps scores, not probabilities)");
      ScoreRequest score;
      score.policy = req.policy;
      score.run = req.run;
      score.device = a->device;
      score.budgets = split_list(a->budgets, "budgets");
      ScoreRequest::schema().refuse_exclusive([&](std::string_view name) {
        return name == "budgets" ? !a->budgets.empty() : a->request.flags.given(name);
      });
      return run_device_replay(score, a->trace, a->out, g);
    }
    require(a->budgets.empty(), "--budgets needs --device (the scorer replays several budgets in one pass)");
    const auto checkpoint = open_checkpoint(a->checkpoint, cmd, {"trace", "--out", "--checkpoint"}, {a->trace});
    const scaleout::RankTeam team(g.threads, !g.quiet, checkpoint.get());
    ReplayRequest req;
    Trace tr;
    team.together([&] {  // every rank parses and reads; an error all ranks hit is printed once
      req = a->request.request();
      req.record_sets = !a->out.empty();  // without --out, memory stays O(n·d) per head (docs/reliability.md)
      tr = read_trace(a->trace);
    });
    const std::optional<ReplayResult> result = run_replay(tr, req, team);
    if (!result) return 0;  // another rank: rank 0 holds the result
    const ReplayResult& r = *result;
    if (!a->out.empty()) {
      AtomicFile f(a->out);
      write_step_records(f.stream(), r, req.record_probs);
      f.commit();
    }
    std::cout << replay_report(r, req.options(tr), a->trace, tr.n_tokens).text();
    if (!a->out.empty()) std::cout << "per-step records: " << a->out << '\n';
    return 0;
  };
}

}  // namespace kvo::cli
