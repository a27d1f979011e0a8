// kvoracle verify: greedy eviction against the static optimum per step on each head, plus the
// static greedy theorem check. Exit 1 when a theorem fails (a kvoracle bug); findings never fail.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numbers>

#include "commands.hpp"
#include "kvo/checks/greedy_vs_static.hpp"
#include "kvo/checks/static_greedy_check.hpp"
#include "kvo/checks/svg_plot.hpp"
#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/trace_io.hpp"
#include "options.hpp"
#include "table.hpp"

namespace kvo::cli {

Runner add_verify(CLI::App& app, const Global& g) {
  auto* cmd = app.add_subcommand("verify", "check greedy eviction against the static optimum on a trace");
  struct Args {
    std::string trace, policies = "h2o,h2o-paper,tova,scissorhands,streaming,window,random", json, plot;
    std::string objective_h = "id";
    BudgetArgs budget;
    PolicyArgs params;
    ReplayArgs replay;
    StaticGreedyOptions sg;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--policies", a->policies, "comma-separated policies to check")->capture_default_str();
  cmd->add_option("--objective-h", a->objective_h, "h of the dense accumulated objective: id, sqrt, log")
      ->capture_default_str();
  cmd->add_option("--json", a->json, "write the results as JSON");
  cmd->add_option("--plot", a->plot, "write an SVG plot of the median ratio per step against the 1-1/e line");
  cmd->add_option("--theorem-samples", a->sg.samples_per_head, "static greedy theorem check: steps per head")
      ->capture_default_str();
  cmd->add_option("--theorem-budget", a->sg.budget, "static greedy theorem check: k")->capture_default_str();
  add_budget_options(cmd, a->budget);
  add_policy_options(cmd, a->params);
  add_replay_options(cmd, a->replay);
  return [a, &g] {
    const Trace tr = read_trace(a->trace);
    const Concave h = parse_concave(a->objective_h);
    const auto names = split_list(a->policies);
    require(!names.empty(), "--policies names no policy");
    std::vector<ReplayOptions> opts;
    long units = 0;
    for (const auto& p : names) {
      opts.push_back(make_replay_options(a->replay, a->budget, a->params, p, g.threads));
      units += replay_units(tr, opts.back());
    }
    const double line = 1.0 - 1.0 / std::numbers::e;
    nlohmann::json out = {{"trace", a->trace},
                          {"n", tr.n_tokens},
                          {"budget", opts.front().budget.str()},
                          {"objective", "dense-acc[" + to_string(h) + "]"},
                          {"line", line},
                          {"policies", nlohmann::json::array()}};
    Table t({"policy", "heads", "steps", "rho min", "rho median", "rho mean", "below 1-1/e", "worst (layer,head,step)",
             "retained mass"});
    Progress bar("verify", units, !g.quiet);
    LinePlot plot;
    plot.title = "median over heads of rho_i = f(S_i) / OPT_i (dense accumulated attention), budget " +
                 opts.front().budget.str();
    plot.x_label = "step i";
    plot.y_label = "rho_i";
    plot.lines.push_back({"1 - 1/e", line});
    bool theorems_hold = true;
    std::vector<StaticGreedySample> theorem;
    for (size_t x = 0; x < names.size(); ++x) {
      ReplayOptions o = opts[x];
      o.on_unit_done = [&] { bar.tick(); };
      const ReplayResult r = replay(tr, o);
      const GreedyVsStatic gv = greedy_vs_static(tr, r, h, o.prompt_len, g.threads);
      long steps = 0, below = 0;
      double mn = 1.0, med_sum = 0.0, mean_sum = 0.0, mass = 0.0;
      std::string worst = "-";
      nlohmann::json jh = nlohmann::json::array();
      for (const auto& hr : gv.heads) {
        steps += hr.stats.steps;
        below += hr.stats.below_line;
        med_sum += hr.stats.median;
        mean_sum += hr.stats.mean;
        mass += hr.mean_retained_mass;
        if (hr.stats.steps > 0 && hr.stats.min <= mn) {
          mn = hr.stats.min;
          worst = "(" + std::to_string(hr.layer) + "," + std::to_string(hr.head) + "," +
                  std::to_string(hr.stats.worst_step) + ")";
        }
        jh.push_back({{"layer", hr.layer},
                      {"head", hr.head},
                      {"k", hr.budget.total},
                      {"steps", hr.stats.steps},
                      {"rho_min", hr.stats.min},
                      {"rho_median", hr.stats.median},
                      {"rho_mean", hr.stats.mean},
                      {"worst_step", hr.stats.worst_step},
                      {"below_line", hr.stats.below_line},
                      {"retained_mass", hr.mean_retained_mass}});
      }
      const double nh = static_cast<double>(gv.heads.size());
      PlotSeries ser{r.policy, {}, {}, false};
      std::vector<double> col(gv.heads.size());
      for (int i = 0; i < tr.n_tokens; ++i) {
        for (size_t hh = 0; hh < gv.heads.size(); ++hh) col[hh] = gv.heads[hh].rho[static_cast<size_t>(i)];
        std::nth_element(col.begin(), col.begin() + static_cast<long>(col.size() / 2), col.end());
        ser.x.push_back(i);
        ser.y.push_back(col[col.size() / 2]);
      }
      plot.series.push_back(std::move(ser));
      t.row({r.policy, std::to_string(gv.heads.size()), std::to_string(steps), fmt(mn), fmt(med_sum / nh),
             fmt(mean_sum / nh), std::to_string(below), worst, fmt(mass / nh)});
      out["policies"].push_back({{"policy", r.policy}, {"nested", r.nested}, {"heads", jh}});
      if (x == 0) {
        StaticGreedyOptions sg = a->sg;
        sg.threads = g.threads;
        theorem = static_greedy_check(tr, r, sg);
      }
    }
    bar.finish();
    std::cout << "kvoracle verify " << a->trace << ": n = " << tr.n_tokens << ", " << tr.n_layers << " layers x "
              << tr.n_heads << " heads, budget " << opts.front().budget.str() << "\n\n";
    std::cout << "Finding: per-step ratio rho_i = f(S_i) / max_{|S|<=k} f(S), f = dense accumulated attention ["
              << to_string(h) << "], against the 1-1/e = " << fmt(line) << " line\n";
    t.print(std::cout);
    int fails = 0;
    double worst_ratio = 1.0;
    nlohmann::json jt = nlohmann::json::array();
    for (const auto& s : theorem) {
      fails += s.holds ? 0 : 1;
      if (s.opt > 0) worst_ratio = std::min(worst_ratio, s.greedy / s.opt);
      jt.push_back({{"layer", s.layer},
                    {"head", s.head},
                    {"step", s.step},
                    {"ground", s.ground},
                    {"k", s.k},
                    {"greedy", s.greedy},
                    {"opt", s.opt},
                    {"bound", s.bound},
                    {"factor", s.factor},
                    {"exact", s.exact},
                    {"holds", s.holds}});
    }
    theorems_hold = fails == 0;
    out["theorem_static_greedy"] = jt;
    std::cout
        << "\nTheorem (Nemhauser-Wolsey-Fisher; Leskovec a-posteriori bound): lazy greedy on facility location vs "
           "exact optimum at "
        << theorem.size() << " sampled steps: worst greedy/OPT = " << fmt(worst_ratio) << ", violations = " << fails
        << (theorems_hold ? "  [holds]" : "  [FAILS: bug in kvoracle]") << '\n';
    if (!a->plot.empty()) {
      write_file_atomic(a->plot, plot.svg());
      std::cout << "plot: " << a->plot << '\n';
    }
    if (!a->json.empty()) {
      write_file_atomic(a->json, out.dump(2) + "\n");
      std::cout << "results: " << a->json << '\n';
    }
    return theorems_hold ? 0 : 1;
  };
}

}  // namespace kvo::cli
