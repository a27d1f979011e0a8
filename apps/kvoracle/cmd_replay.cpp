// kvoracle replay: runs one policy over a trace; per-step JSON Lines and a summary table. The heads
// go to every MPI rank under mpirun/srun. kvoracle score (also spelled `replay --device`): the greedy
// scorer, on rank 0 alone.
#include <chrono>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "distributed.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/replay.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/gpu/scorer.hpp"
#include "options.hpp"
#include "table.hpp"

namespace kvo::cli {

namespace {

// kvoracle score (replay --device): the greedy scorer (CUDA or its CPU twin) for the H2O family.
template <typename Args>
int run_device_replay(const Trace& tr, const RunConfig& run, const Args& a, const Global& g) {
  require(run.gqa == GqaMode::PerQueryHead, "the greedy scorer replays one cache per query head: gqa must be query");
  require(!a.probs, "--probs is not available with --device (the scorer keeps scores, not probabilities)");
  ScorerOptions so;
  so.run = run;
  so.device = parse_scorer_device(a.device);
  for (const auto& item : split_list(a.budgets, "budgets")) so.totals.push_back(Amount::parse(item));  // --budgets
  so.threads = g.threads;
  const std::vector<Budget> budgets = so.budgets();
  const auto t0 = std::chrono::steady_clock::now();
  const ScorerResult r = run_scorer(tr, so);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!a.out.empty()) {
    AtomicFile f(a.out);
    for (const auto& u : r.units)
      for (int i = 0; i < tr.n_tokens; ++i) {
        std::vector<int> evicted;
        for (int j = 0; j <= i; ++j)
          if (u.evict_step[static_cast<size_t>(j)] == i) evicted.push_back(j);
        f.stream() << nlohmann::json({{"layer", u.layer},
                                      {"head", u.head},
                                      {"budget", budgets[static_cast<size_t>(u.budget_index)].str()},
                                      {"step", i},
                                      {"kept", kept_after(u, i)},
                                      {"evicted", evicted}})
                          .dump()
                   << '\n';
      }
    f.commit();
  }
  std::cout << "policy " << a.policy << " on " << a.trace << " (n = " << tr.n_tokens << ") with the greedy scorer\n"
            << "device: " << r.device << "\n";
  Table t({"budget", "k (first head)", "heads", "evictions", "mean final score of kept tokens"});
  for (size_t b = 0; b < budgets.size(); ++b) {
    long heads = 0, evictions = 0;
    double kept_score = 0.0;
    long kept = 0;
    int k = 0;
    for (const auto& u : r.units) {
      if (u.budget_index != static_cast<int>(b)) continue;
      if (heads++ == 0) k = u.budget.total;
      for (size_t j = 0; j < u.evict_step.size(); ++j) {
        if (u.evict_step[j] >= 0) {
          ++evictions;
        } else {
          kept_score += u.score[j];
          ++kept;
        }
      }
    }
    t.row({budgets[b].str(), std::to_string(k), std::to_string(heads), std::to_string(evictions),
           fmt(kept ? kept_score / static_cast<double>(kept) : 0.0)});
  }
  t.print(std::cout);
  const double head_steps = static_cast<double>(r.units.size()) * tr.n_tokens;
  std::cout << fmt(sec, 3) << " s, " << fmt(head_steps / sec, 4) << " head-steps/s\n";
  if (!a.out.empty()) std::cout << "per-step records: " << a.out << '\n';
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
    std::string trace, policy = policy_name(PolicyId::H2O), out, device = "cpu", budgets;
    bool probs = false;  // not an option here: the scorer keeps scores, not probabilities
    RunArgs run;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--policy,-p", a->policy, "eviction policy: " + scorer_policies())->capture_default_str();
  cmd->add_option("--device", a->device, "cpu (the twin), cuda, or auto (the GPU when there is one)")
      ->capture_default_str();
  cmd->add_option("--budgets", a->budgets, "several budget totals in one pass, e.g. 5%,10%,20% (replaces --budget)");
  cmd->add_option("--out,-o", a->out, "per-step kept and evicted keys as JSON Lines");
  add_run_options(cmd, a->run);
  return [a, &g] {
    const Trace tr = read_trace(a->trace);
    return run_device_replay(tr, a->run.build(parse_policy(a->policy), &tr), *a, g);
  };
}

Runner add_replay(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("replay", "replay an eviction policy over a trace");
  struct Args {
    std::string trace, policy = policy_name(PolicyId::H2O), out, device, budgets, checkpoint;
    bool probs = false;
    RunArgs run;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--policy,-p", a->policy, "eviction policy (see `kvoracle policies`)")->capture_default_str();
  cmd->add_option("--out,-o", a->out, "per-step records as JSON Lines");
  cmd->add_flag("--probs", a->probs, "include the renormalised probabilities in --out");
  cmd->add_option("--device", a->device,
                  "the same as `kvoracle score --device`: the greedy scorer (" + scorer_policies() +
                      ") on cpu (the twin), cuda, or auto");
  cmd->add_option("--budgets", a->budgets,
                  "with --device: several budget totals in one pass, e.g. 5%,10%,20% (replaces --budget)");
  add_run_options(cmd, a->run);
  cmd->add_option("--checkpoint", a->checkpoint,
                  "store each finished head in this directory; a rerun with the same arguments resumes from it");
  return [a, &g, cmd] {
    if (!a->device.empty()) {  // the greedy scorer runs on rank 0 alone (its own threads or GPU)
      const Trace tr = read_trace(a->trace);
      return run_device_replay(tr, a->run.build(parse_policy(a->policy), &tr), *a, g);
    }
    require(a->budgets.empty(), "--budgets needs --device (the scorer replays several budgets in one pass)");
    const auto checkpoint = open_checkpoint(a->checkpoint, cmd, {"trace", "--out", "--checkpoint"}, {a->trace});
    const scaleout::RankTeam team(g.threads, !g.quiet, checkpoint.get());
    Trace tr;
    std::unique_ptr<ReplayPlan> plan;
    team.together([&] {
      tr = read_trace(a->trace);
      ReplayOptions ro;
      ro.run = a->run.build(parse_policy(a->policy), &tr);
      ro.record_probs = a->probs;
      ro.record_sets = !a->out.empty();  // without --out, memory stays O(n·d) per head (docs/reliability.md)
      plan = std::make_unique<ReplayPlan>(tr, ro);
    });
    const ReplayOptions& o = plan->options();
    const std::optional<ReplayResult> result = team.run(*plan, "t0", "replay " + a->policy);
    if (!result) return 0;  // another rank: rank 0 holds the result
    const ReplayResult& r = *result;
    if (!a->out.empty()) {
      AtomicFile f(a->out);
      for (const auto& h : r.heads)
        for (size_t i = 0; i < h.steps.size(); ++i) {
          const auto& s = h.steps[i];
          nlohmann::json j = {{"layer", h.layer},
                              {"head", h.head},
                              {"step", i},
                              {"attended", s.attended},
                              {"kept", s.kept},
                              {"evicted", s.evicted},
                              {"reentered", s.reentered},
                              {"retained_mass", s.retained_mass},
                              {"accumulated", s.accumulated}};
          if (a->probs) j["probs"] = s.probs;
          f.stream() << j.dump() << '\n';
        }
      f.commit();
    }
    std::cout << "policy " << r.policy << " on " << a->trace << " (n = " << tr.n_tokens << ", budget "
              << o.run.budget.str() << ", gqa " << to_string(r.gqa) << ", prompt " << o.run.prompt_len << ")\n";
    struct Agg {
      int heads = 0;
      long evictions = 0, reentries = 0;
      double mass = 0, min_mass = 1;
      int k = 0;
    };
    std::map<int, Agg> per_layer;
    for (const auto& h : r.heads) {
      auto& x = per_layer[h.layer];
      ++x.heads;
      x.evictions += h.evictions;
      x.reentries += h.reentries;
      x.mass += h.mean_retained_mass;
      x.min_mass = std::min(x.min_mass, h.mean_retained_mass);
      x.k = h.budget.total;
    }
    Table t({"layer", "heads", "k", "evictions", "re-entries", "mean retained mass", "worst head"});
    for (const auto& [l, x] : per_layer)
      t.row({std::to_string(l), std::to_string(x.heads), std::to_string(x.k), std::to_string(x.evictions),
             std::to_string(x.reentries), fmt(x.mass / x.heads), fmt(x.min_mass)});
    t.print(std::cout);
    if (!a->out.empty()) std::cout << "per-step records: " << a->out << '\n';
    return 0;
  };
}

}  // namespace kvo::cli
