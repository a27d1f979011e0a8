// kvoracle oracle: the exact static optimum max_{|S| <= k, S ⊆ [i]} f_i(S) per step and head.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.hpp"
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
#include "table.hpp"

namespace kvo::cli {
namespace {

struct Solve {
  int step;
  StaticSolution sol;
};

}  // namespace

namespace {

template <class Args>
int run_dynamic(const Args& a, const Global& g) {
  const Trace tr = read_trace(a.trace);
  CompetitiveOptions co;
  co.forced_window = a.forced_window;
  co.threads = g.threads;
  for (const auto& p : split_list(a.policies))
    co.policies.push_back(make_replay_options(a.replay, a.budget, a.params, p, g.threads));
  require(!co.policies.empty(), "--policies names no policy");
  long units = 0;
  for (const auto& p : co.policies) units += replay_units(tr, p);
  Progress bar("oracle --dynamic", units / static_cast<long>(co.policies.size()), !g.quiet);
  co.on_head_done = [&] { bar.tick(); };
  const auto heads = competitive_ratios(tr, co);
  bar.finish();
  double opt = 0, stat = 0;
  long bugs = 0;
  std::vector<std::string> names;
  for (const auto& pr : heads.front().policies) names.push_back(pr.policy);
  std::vector<double> mean(names.size(), 0.0), worst(names.size(), 1e300), value(names.size(), 0.0),
      excess(names.size(), 0.0);
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
      jp[pr.policy] = {{"value", pr.value}, {"ratio", pr.ratio}, {"nested", pr.nested}};
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
  std::cout << "dynamic offline optimum of the retained dense mass on " << a.trace << " (n = " << tr.n_tokens
            << ", budget " << co.policies.front().budget.str() << ", forced window " << a.forced_window << ", "
            << heads.size() << " heads)\n"
            << "mean per head: OPT_dyn = " << fmt(opt / nh) << ", sum_i opt_i = " << fmt(stat / nh)
            << ", OPT_dyn / sum_i opt_i = " << fmt(opt / stat) << "\n";
  Table t({"policy", "nested", "mean value", "mean ratio", "worst head ratio", "max excess over OPT_dyn"});
  for (size_t x = 0; x < names.size(); ++x)
    t.row({names[x], heads.front().policies[x].nested ? "yes" : "no", fmt(value[x] / nh), fmt(mean[x] / nh),
           fmt(worst[x]), excess[x] > 0 ? fmt(excess[x]) : "-"});
  t.print(std::cout);
  std::cout << "ordering policy <= OPT_dyn <= sum_i opt_i and dual certificates: " << bugs
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
    bool dynamic = false;
    std::string policies = "h2o,h2o-paper,tova,scissorhands,streaming,window,random,h2o-mask", json;
    int forced_window = 0;
    PolicyArgs params;
    ReplayArgs replay;
    std::string trace, out, objective = "dense-acc", h = "id";
    int window = 16, every = 1;
    long long node_limit = 200000;
    std::vector<int> layers;
    BudgetArgs budget;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--objective", a->objective, "dense-acc (A), mass (M) or fl (facility location)")
      ->check(CLI::IsMember({"dense-acc", "mass", "fl"}))
      ->capture_default_str();
  cmd->add_option("--h", a->h, "concave transform for dense-acc / mass: id, sqrt, log")->capture_default_str();
  cmd->add_option("--window", a->window, "fl: client queries")->capture_default_str();
  cmd->add_option("--every", a->every, "solve every N-th step")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--layers", a->layers, "layers (default: all)")->delimiter(',');
  cmd->add_option("--node-limit", a->node_limit,
                  "fl: branch-and-bound nodes per solve; past it the record is inexact with bounds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--out,-o", a->out, "per-step optima as JSON Lines");
  cmd->add_flag(
      "--dynamic", a->dynamic,
      "exact offline optimum of the nested problem (retained dense mass) and each policy's competitive ratio");
  cmd->add_option("--policies", a->policies, "--dynamic: comma-separated policies")->capture_default_str();
  cmd->add_option("--forced-window", a->forced_window, "--dynamic: last r tokens forced into OPT's caches")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--json", a->json, "--dynamic: write per-head results as JSON");
  add_budget_options(cmd, a->budget);
  return [a, &g] {
    a->replay.layers = a->layers;
    if (a->dynamic) return run_dynamic(*a, g);
    const Trace tr = read_trace(a->trace);
    const Budget budget = a->budget.build();
    const Concave h = parse_concave(a->h);
    std::vector<std::pair<int, int>> heads;
    for (int l = 0; l < tr.n_layers; ++l) {
      if (!a->layers.empty() && std::find(a->layers.begin(), a->layers.end(), l) == a->layers.end()) continue;
      for (int hd = 0; hd < tr.n_heads; ++hd) heads.emplace_back(l, hd);
    }
    for (int l : a->layers) require(l >= 0 && l < tr.n_layers, "layer " + std::to_string(l) + " is not in the trace");
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
        if (a->objective == "fl") {
          const int first = std::max(0, i - a->window + 1);
          const FacilityLocation f(dense.block(first, 0, i - first + 1, i + 1));
          BranchAndBoundOptions bb;
          bb.node_limit = a->node_limit;
          results[x].push_back({i, solve_static(f, k, bb)});
        } else {
          std::vector<double> w(static_cast<size_t>(i) + 1);
          for (int j = 0; j <= i; ++j) w[j] = a->objective == "mass" ? dense(i, j) : acc[j];
          results[x].push_back({i, solve_topk(ModularConcave(std::move(w), h, a->objective), k)});
        }
      }
      bar.tick();
    });
    bar.finish();
    if (!a->out.empty()) {
      AtomicFile f(a->out);
      for (size_t x = 0; x < heads.size(); ++x)
        for (const auto& s : results[x])
          f.stream() << nlohmann::json{{"layer", heads[x].first},   {"head", heads[x].second}, {"step", s.step},
                                       {"objective", a->objective}, {"value", s.sol.value},    {"upper", s.sol.upper},
                                       {"exact", s.sol.exact},      {"method", s.sol.method},  {"set", s.sol.set}}
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
    std::cout << "static optimum of " << a->objective << " on " << a->trace << " (budget " << budget.str() << ")\n";
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
