// kvoracle oracle: the exact static optimum max_{|S| <= k, S ⊆ [i]} f_i(S) per step and head.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.hpp"
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

Runner add_oracle(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("oracle", "exact static optimum per step for each head");
  struct Args {
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
  add_budget_options(cmd, a->budget);
  return [a, &g] {
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
