// kvoracle oracle: the exact static optimum max_{|S| <= k, S ⊆ [i]} f_i(S) per step and head.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "distributed.hpp"
#include "kvo/checks/competitive.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/attention.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/facility_location.hpp"
#include "kvo/core/parallel.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/static_oracle.hpp"
#include "options.hpp"
#include "press_options.hpp"
#include "table.hpp"

namespace kvo::cli {
namespace {

struct Solve {
  int step;
  StaticSolution sol;
};

}  // namespace

namespace {

// The heads go to every MPI rank under mpirun/srun; --checkpoint makes the run resumable.
template <class Args>
int run_offline(const Args& a, const Global& g, const CLI::App* cmd) {
  const auto checkpoint = open_checkpoint(a.checkpoint, cmd, {"trace", "--json", "--out", "--checkpoint"}, {a.trace});
  Trace tr;
  CompetitiveOptions co;
  std::unique_ptr<CompetitivePlan> plan;
  on_every_rank([&] {
    tr = read_trace(a.trace);
    co.forced_window = a.forced_window;
    for (const PolicyId id : parse_policy_list(a.policies)) {
      ReplayOptions ro;
      ro.run = a.run.build(id, &tr);
      co.policies.push_back(std::move(ro));
    }
    plan = std::make_unique<CompetitivePlan>(tr, co);
  });
  const auto bytes = run_plan({"t0", "oracle --offline", plan->size(), [&](int u) { return plan->name(u); },
                               [&](int u) { return encode_competitive(plan->run(u)); }, nullptr},
                              g.threads, g.quiet, checkpoint.get());
  if (!dist::Team::world().root()) return 0;
  std::vector<std::vector<HeadCompetitive>> units;
  for (const auto& b : bytes) units.push_back(decode_competitive(b));
  const auto heads = plan->assemble(std::move(units));
  double opt = 0, stat = 0;
  long bugs = 0;
  std::vector<std::string> names;
  for (const auto& pr : heads.front().policies) names.push_back(pr.policy);
  std::vector<double> mean(names.size(), 0.0), worst(names.size(), 1e300), value(names.size(), 0.0),
      excess(names.size(), 0.0);
  std::vector<std::string> outside(names.size());  // the first reason the ordering does not apply
  nlohmann::json jh = nlohmann::json::array();
  for (const auto& h : heads) {
    opt += h.opt_dyn;
    stat += h.static_sum;
    bugs += static_cast<long>(h.violations.size());
    nlohmann::json jp = nlohmann::json::object();
    for (size_t x = 0; x < h.policies.size(); ++x) {
      const auto& pr = h.policies[x];
      mean[x] += pr.ratio;
      worst[x] = std::min(worst[x], pr.ratio);
      value[x] += pr.value;
      excess[x] = std::max(excess[x], pr.value - h.opt_dyn);
      if (outside[x].empty()) outside[x] = pr.outside;
      jp[pr.policy] = {{"value", pr.value},
                       {"ratio", pr.ratio},
                       {"nested", pr.nested},
                       {"ordering_checked", pr.outside.empty()},
                       {"outside_problem", pr.outside}};
    }
    jh.push_back({{"layer", h.layer},
                  {"head", h.head},
                  {"k", h.k},
                  {"opt_dyn", h.opt_dyn},
                  {"dual_bound", h.dual_bound},
                  {"static_sum", h.static_sum},
                  {"policies", jp},
                  {"violations", h.violations}});
  }
  const double nh = static_cast<double>(heads.size());
  std::cout << "offline optimum of the retained dense mass on " << a.trace << " (n = " << tr.n_tokens << ", budget "
            << co.policies.front().run.budget.str() << ", forced window " << a.forced_window << ", " << heads.size()
            << " heads)\n"
            << "mean per head: OPT_dyn = " << fmt(opt / nh) << ", sum_i opt_i = " << fmt(stat / nh)
            << ", OPT_dyn / sum_i opt_i = " << fmt(opt / stat) << "\n";
  Table t({"policy", "nested", "mean value", "mean ratio", "worst head ratio", "max excess over OPT_dyn", "ordering"});
  long unchecked = 0;
  for (size_t x = 0; x < names.size(); ++x) {
    unchecked += outside[x].empty() ? 0 : 1;
    t.row({names[x], heads.front().policies[x].nested ? "yes" : "no", fmt(value[x] / nh), fmt(mean[x] / nh),
           fmt(worst[x]), excess[x] > 0 ? fmt(excess[x]) : "-",
           outside[x].empty() ? "checked" : "not checked: " + outside[x]});
  }
  t.print(std::cout);
  std::cout << "ordering policy <= OPT_dyn <= sum_i opt_i (for the " << names.size() - static_cast<size_t>(unchecked)
            << " policies inside OPT_dyn's problem) and dual certificates: " << bugs
            << (bugs ? " violations [FAILS: bug in kvoracle]" : " violations [holds]") << '\n';
  if (!a.json.empty()) {
    write_file_atomic(
        a.json, nlohmann::json{{"trace", a.trace}, {"forced_window", a.forced_window}, {"heads", jh}}.dump(1) + "\n");
    std::cout << "results: " << a.json << '\n';
  }
  return bugs ? 1 : 0;
}

}  // namespace

Runner add_oracle(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("oracle", "exact static optimum per step for each head");
  struct Args {
    bool offline = false;
    std::string policies = join_policy_names(default_policies(PolicyListUse::Checks)), json;
    int forced_window = 0;
    RunArgs run;
    std::string trace, out, checkpoint;
    int every = 1;
    long long node_limit = 200000;
    int prefill = 0;
    PressArgs press;
  };
  auto a = std::make_shared<Args>();
  a->run.objective = "dense-acc";  // the static objective; also the greedy policy's under --offline
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--every", a->every, "solve every N-th step")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--node-limit", a->node_limit,
                  "fl: branch-and-bound nodes per solve; past it the record is inexact with bounds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--out,-o", a->out, "per-step optima as JSON Lines");
  cmd->add_flag("--offline,--dynamic", a->offline,
                "exact offline optimum of the nested problem (retained dense mass) and each policy's competitive ratio "
                "(--dynamic: the old name)");
  cmd->add_option("--policies", a->policies, "--offline: comma-separated policies")->capture_default_str();
  cmd->add_option("--forced-window", a->forced_window, "--offline: last r tokens forced into OPT's caches")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--json", a->json, "--offline: write per-head results as JSON");
  cmd->add_option("--checkpoint", a->checkpoint,
                  "--offline: store each finished head in this directory; a rerun with the same arguments resumes");
  cmd->add_option("--prefill", a->prefill,
                  "prompt length P: the exact optimum of compressing the prompt once to k keys per KV head (the "
                  "following queries' retained mass) and kvpress's presses against it")
      ->check(CLI::PositiveNumber);
  add_press_options(cmd, a->press);
  // --objective (dense-acc, mass or fl here), --h and --window set the static objective.
  add_run_options(cmd, a->run);
  return [a, &g, cmd] {
    if (a->prefill > 0) {
      require(!a->offline && a->checkpoint.empty() && a->out.empty(),
              "--prefill takes --json for its records; it does not combine with --offline, --checkpoint or --out");
      return run_prefill_oracle({a->trace, a->json, a->prefill, a->run.layers, a->press}, g);
    }
    if (a->offline) return run_offline(*a, g, cmd);
    require(a->checkpoint.empty(), "--checkpoint needs --offline (the static oracle is not resumable)");
    if (!dist::Team::world().root()) return 0;  // the static oracle runs on rank 0
    const std::string objective = a->run.objective;
    require(objective == "dense-acc" || objective == "mass" || objective == "fl",
            "the static oracle's --objective is dense-acc (A), mass (M) or fl (facility location), not '" + objective +
                "'");
    const Trace tr = read_trace(a->trace);
    // The static optimum replays no policy: the configuration carries its budget, layers and heads.
    const RunConfig run = a->run.build(PolicyId::Full, &tr);
    require(run.gqa == GqaMode::PerQueryHead, "the static oracle solves one query head at a time: --gqa must be query");
    const Budget& budget = run.budget;
    const Concave h = run.policy.objective.h;
    std::vector<std::pair<int, int>> heads;
    for (int l : run.chosen_layers(tr.n_layers))
      for (int hd : run.chosen_heads(tr.n_heads)) heads.emplace_back(l, hd);
    for (auto [l, hd] : heads) budget.resolve(tr.n_tokens, l, hd);
    std::vector<std::vector<Solve>> results(heads.size());
    Progress bar("oracle", static_cast<long>(heads.size()), !g.quiet);
    parallel_for(static_cast<int>(heads.size()), g.threads, [&](int x) {
      const auto [l, hd] = heads[x];
      const int k = budget.resolve(tr.n_tokens, l, hd).total;
      const HeadView view(tr, l, hd);
      const Eigen::MatrixXd dense = dense_attention(view);
      std::vector<double> acc(static_cast<size_t>(tr.n_tokens), 0.0);
      for (int i = 0; i < tr.n_tokens; ++i) {
        for (int j = 0; j <= i; ++j) acc[j] += dense(i, j);
        if (i % a->every != 0 && i != tr.n_tokens - 1) continue;
        if (objective == "fl") {
          const int first = std::max(0, i - run.policy.objective.window + 1);
          const FacilityLocation f(dense.block(first, 0, i - first + 1, i + 1));
          BranchAndBoundOptions bb;
          bb.node_limit = a->node_limit;
          results[x].push_back({i, solve_static(f, k, bb)});
        } else {
          std::vector<double> w(static_cast<size_t>(i) + 1);
          for (int j = 0; j <= i; ++j) w[j] = objective == "mass" ? dense(i, j) : acc[j];
          results[x].push_back({i, solve_topk(ModularConcave(std::move(w), h, objective), k)});
        }
      }
      bar.tick();
    });
    bar.finish();
    if (!a->out.empty()) {
      AtomicFile f(a->out);
      for (size_t x = 0; x < heads.size(); ++x)
        for (const auto& s : results[x])
          f.stream() << nlohmann::json{{"layer", heads[x].first}, {"head", heads[x].second}, {"step", s.step},
                                       {"objective", objective},  {"value", s.sol.value},    {"upper", s.sol.upper},
                                       {"exact", s.sol.exact},    {"method", s.sol.method},  {"set", s.sol.set}}
                            .dump()
                     << '\n';
      f.commit();
    }
    std::map<int, std::tuple<int, long, double, int>> per_layer;  // solves, inexact, mean final value, heads
    for (size_t x = 0; x < heads.size(); ++x) {
      auto& [solves, inexact, final_value, nh] = per_layer[heads[x].first];
      for (const auto& s : results[x]) {
        ++solves;
        inexact += s.sol.exact ? 0 : 1;
      }
      if (!results[x].empty()) final_value += results[x].back().sol.value;
      ++nh;
    }
    std::cout << "static optimum of " << objective << " on " << a->trace << " (budget " << budget.str() << ")\n";
    Table t({"layer", "heads", "solves", "inexact", "mean OPT at the last step"});
    for (const auto& [l, v] : per_layer) {
      const auto& [solves, inexact, final_value, nh] = v;
      t.row({std::to_string(l), std::to_string(nh), std::to_string(solves), std::to_string(inexact),
             fmt(final_value / nh)});
    }
    t.print(std::cout);
    if (!a->out.empty()) std::cout << "per-step optima: " << a->out << '\n';
    return 0;
  };
}

}  // namespace kvo::cli
