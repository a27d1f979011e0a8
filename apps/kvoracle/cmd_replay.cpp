// kvoracle replay: runs one policy over a trace; per-step JSON Lines and a summary table.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/trace_io.hpp"
#include "options.hpp"
#include "table.hpp"

namespace kvo::cli {

Runner add_replay(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("replay", "replay an eviction policy over a trace");
  struct Args {
    std::string trace, policy = "h2o", out;
    bool probs = false;
    BudgetArgs budget;
    PolicyArgs params;
    ReplayArgs replay;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--policy,-p", a->policy, "eviction policy (see `kvoracle policies`)")->capture_default_str();
  cmd->add_option("--out,-o", a->out, "per-step records as JSON Lines");
  cmd->add_flag("--probs", a->probs, "include the renormalised probabilities in --out");
  add_budget_options(cmd, a->budget);
  add_policy_options(cmd, a->params);
  add_replay_options(cmd, a->replay);
  return [a, &g] {
    const Trace tr = read_trace(a->trace);
    ReplayOptions o = make_replay_options(a->replay, a->budget, a->params, a->policy, g.threads);
    o.record_probs = a->probs;
    Progress bar("replay " + a->policy, replay_units(tr, o), !g.quiet);
    o.on_unit_done = [&] { bar.tick(); };
    const ReplayResult r = replay(tr, o);
    bar.finish();
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
    std::cout << "policy " << r.policy << " on " << a->trace << " (n = " << tr.n_tokens << ", budget " << o.budget.str()
              << ", gqa " << to_string(r.gqa) << ")\n";
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
