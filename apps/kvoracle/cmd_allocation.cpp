#include "cmd_allocation.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/core/trace_io.hpp"
#include "kvo/oracle/shared_decoding.hpp"
#include "kvo/oracle/shared_prefill.hpp"
#include "kvo/proofs_check/svg_plot.hpp"
#include "schema_flags.hpp"
#include "table.hpp"

namespace kvo::cli {
namespace {

struct AllocationArgs {
  std::string trace, json, plot;
  RequestFlags<AllocationRequest> request;
};

// "yes" when the dual bound meets the value up to rounding, else the gap (a bug in kvoracle).
std::string certified(double value, double upper) {
  const double gap = upper - value;
  if (std::abs(gap) <= 1e-9 * std::max(1.0, std::abs(value))) return "yes";
  std::ostringstream s;
  s << "NO: gap " << gap;
  return s.str();
}

// A periodic row and its two references: "yes" when all three close, else the first gap.
std::string certified_with_references(const SharedDecodingRow& r) {
  for (const auto& [value, upper] :
       {std::pair{r.value, r.upper}, std::pair{r.peak_value, r.peak_upper}, std::pair{r.mean_value, r.mean_upper}})
    if (const std::string c = certified(value, upper); c != "yes") return c;
  return "yes";
}

// A plot's series: the scope, and the page size when pages are evicted whole.
std::string plot_series(BudgetScope scope, int page_size) {
  return budget_scope_name(scope) + (page_size > 1 ? ", pages of " + std::to_string(page_size) : "");
}

void write_outputs(const AllocationArgs& a, const AllocationRequest& req, nlohmann::json j, const LinePlot& plot) {
  if (!a.plot.empty()) {
    write_file_atomic(a.plot, plot.svg());
    std::cout << "plot: " << a.plot << '\n';
  }
  if (!a.json.empty()) {
    j["request"] = req.to_json();
    write_file_atomic(a.json, j.dump(1) + "\n");
    std::cout << "results: " << a.json << '\n';
  }
}

// Periodic compression: each scope's optimum at every target and interval, against the same
// scope's every-step optimum with a cache of the periodic one's peak and mean size.
void report_periodic(const AllocationArgs& a, const AllocationRequest& req, const SharedDecodingResult& res) {
  std::cout << "periodic compression on " << a.trace << ": n = " << res.n << ", " << res.layers.size() << " layers x "
            << res.kv_heads << " KV heads, prompt " << req.prompt_len << " steps, recent window " << req.recent
            << " per unit\n"
            << "objective: retained attention mass at every step, summed over units; the cache grows by one token a "
               "step and is compressed to the target after every interval-th decoding step; every row the exact "
               "offline optimum, certified by its LP dual (with both references); vs peak / vs mean: over compression "
               "after every decoding "
               "step with queries seeing the periodic cache's peak (target + interval) / mean (target + (interval "
               "+ 1) / 2) size\n";
  Table t({"scope", "target", "interval", "recent", "mass kept", "gain", "certified", "peak k", "vs peak", "mean k",
           "vs mean"});
  LinePlot plot;
  plot.title = "periodic compression: retained mass over compression at every step with the same peak cache";
  plot.x_label = "compression interval (decoding steps)";
  plot.y_label = "mass kept / every-step optimum at the peak size";
  plot.y_min = plot.y_max = 1.0;
  for (const SharedDecodingRow& r : res.rows) {
    const double vs_peak = r.peak_value > 0 ? r.value / r.peak_value : 1.0;
    t.row({budget_scope_name(r.scope), std::to_string(r.k), std::to_string(r.interval), std::to_string(r.recent),
           fmt(r.value / r.total_mass), fmt(r.gain), certified_with_references(r), std::to_string(r.peak_k),
           fmt(vs_peak), std::to_string(r.mean_k), fmt(r.mean_value > 0 ? r.value / r.mean_value : 1.0)});
    plot.add_point(budget_scope_name(r.scope) + ", target " + std::to_string(r.k), r.interval, vs_peak,
                   r.scope == BudgetScope::Head);
    plot.y_min = std::min(plot.y_min, vs_peak * 0.98);
    plot.y_max = std::max(plot.y_max, vs_peak * 1.02);
  }
  t.print(std::cout);
  write_outputs(a, req, res.to_json(a.trace), plot);
}

// The decoding protocol: the offline optimum of every scope at every budget.
void report_decoding(const AllocationArgs& a, const AllocationRequest& req, const SharedDecodingResult& res) {
  if (req.periodic()) return report_periodic(a, req, res);
  std::cout << "shared budgets on " << a.trace << ", decoding: n = " << res.n << ", " << res.layers.size()
            << " layers x " << res.kv_heads << " KV heads, recent window " << req.recent << " per unit\n"
            << "objective: retained attention mass at every step (mean over each KV head's group), summed over "
               "units; irreversible eviction; every row the exact offline optimum, certified by its LP dual; gain: "
               "over per-head budgets in the same page size; pages' cost: over the same scope in tokens\n";
  Table t({"scope", "page", "k per unit", "recent", "mass kept", "per-head's", "gain", "pages' cost", "certified",
           "held min", "held max"});
  LinePlot plot;
  plot.title = "decoding: retained mass of shared capacity over per-head budgets (exact offline optima)";
  plot.x_label = "budget per unit (k / n)";
  plot.y_label = "gain over per-head budgets";
  plot.y_min = plot.y_max = 1.0;
  for (const SharedDecodingRow& r : res.rows) {
    t.row({budget_scope_name(r.scope), std::to_string(r.page_size), std::to_string(r.k), std::to_string(r.recent),
           fmt(r.value / r.total_mass), fmt(r.per_head_value / r.total_mass), fmt(r.gain),
           r.token_value > 0 ? fmt(r.value / r.token_value) : "-", certified(r.value, r.upper),
           std::to_string(r.min_held), std::to_string(r.max_held)});
    plot.add_point(plot_series(r.scope, r.page_size), static_cast<double>(r.k) / res.n, r.gain,
                   r.scope == BudgetScope::Head);
    plot.y_max = std::max(plot.y_max, r.gain * 1.02);
    plot.y_min = std::min(plot.y_min, r.gain * 0.98);
  }
  t.print(std::cout);
  write_outputs(a, req, res.to_json(a.trace), plot);
}

// kvpress's allocating presses: what each keeps, split into its choice of keys at its own counts
// and its counts against its scope's best and any allocation's best at the same memory.
void report_methods(const SharedPrefillResult& res, LinePlot& plot) {
  constexpr double kMethodsPlotFloor =
      0.8;  // a press that keeps a sliver (snapkv with k < window) would flatten the scopes
  std::cout << "\nkvpress's presses and their allocations, against the optimum with the same memory (mass kept: of "
               "the prompt's mass; at its counts: the best keys with the press's own counts per unit; its scope's "
               "best: the best counts where the press may move them; any allocation: the best over the whole model)\n";
  Table t({"method", "compression", "scope", "k", "floor", "mass kept", "at its counts", "its scope's best",
           "any allocation", "per-head optimum", "keys' share", "counts' share", "certified", "slots min",
           "slots max"});
  for (const AllocationMethodRow& m : res.methods) {
    const auto share = [&](double x) { return m.prompt_mass > 0 ? fmt(x / m.prompt_mass) : std::string("-"); };
    const auto ratio = [](double x, double y) { return y > 0 ? fmt(x / y) : std::string("1"); };
    const std::string c = certified(m.scope_optimum, m.scope_upper);
    t.row({m.method, fmt(m.compression_ratio, 3), budget_scope_name(m.scope), std::to_string(m.k),
           std::to_string(m.floor), share(m.value), share(m.at_counts), share(m.scope_optimum), share(m.best),
           share(m.per_head), ratio(m.value, m.at_counts), ratio(m.at_counts, m.scope_optimum),
           c == "yes" ? certified(m.best, m.best_upper) : c, std::to_string(m.min_slots), std::to_string(m.max_slots)});
    const double gain = m.per_head > 0 ? m.value / m.per_head : 1.0;
    plot.add_point(m.method, static_cast<double>(m.k) / res.prompt_len, gain, true);
    plot.y_min = std::min(plot.y_min, std::max(kMethodsPlotFloor, gain * 0.98));  // the table has what is clipped
  }
  t.print(std::cout);
}

int run_allocation(const AllocationArgs& a, const Global& g) {
  AllocationRequest req = a.request.request();
  req.threads = g.threads;
  const Trace tr = read_trace(a.trace);
  req.validate(tr);
  Progress bar("allocation", static_cast<long>(req.chosen_layers(tr).size()) * tr.n_kv_heads, !g.quiet);
  req.on_unit = [&bar] { bar.tick(); };
  if (req.protocol == AllocationProtocol::Decoding) {
    const SharedDecodingResult res = run_shared_decoding(tr, req);
    bar.finish();
    report_decoding(a, req, res);
    return 0;
  }
  const SharedPrefillResult res = run_shared_prefill(tr, req);
  bar.finish();
  std::cout
      << "shared budgets on " << a.trace << ": prompt " << res.prompt_len << " tokens, " << res.following
      << " following queries, " << res.layers.size() << " layers x " << res.kv_heads << " KV heads, floor " << req.floor
      << "\n"
      << "objective: the following queries' attention mass on the kept prompt keys, summed over units; every "
         "row is exact (Lagrangian bound = value) with the same total as per-head budgets of k; gain: over per-head "
         "token budgets; pages' cost: over the same scope with tokens\n";
  Table t({"scope", "page", "compression", "k per unit", "floor", "mass kept", "per-head's", "gain", "pages' cost",
           "certified", "slots min", "slots max", "units at floor"});
  LinePlot plot;
  plot.title = "prefill: retained mass of shared budgets over per-head budgets (exact optima)";
  plot.x_label = "share of the prompt kept per unit (k / P)";
  plot.y_label = "gain over per-head budgets";
  plot.y_min = 1.0;
  plot.y_max = 1.0;
  for (const SharedPrefillRow& r : res.rows) {
    const double share = r.prompt_mass > 0 ? r.value / r.prompt_mass : 1.0;
    const double head_share = r.prompt_mass > 0 ? r.per_head_value / r.prompt_mass : 1.0;
    const bool head = r.scope == BudgetScope::Head;
    t.row({budget_scope_name(r.scope), std::to_string(r.page_size), fmt(r.compression_ratio, 3), std::to_string(r.k),
           head ? "-" : std::to_string(r.floor), fmt(share), fmt(head_share), fmt(r.gain),
           r.token_value > 0 ? fmt(r.value / r.token_value) : "-", certified(r.value, r.upper),
           std::to_string(r.min_slots), std::to_string(r.max_slots), head ? "-" : std::to_string(r.at_floor)});
    plot.add_point(plot_series(r.scope, r.page_size), static_cast<double>(r.k) / res.prompt_len, r.gain,
                   r.scope == BudgetScope::Head);
    plot.y_max = std::max(plot.y_max, r.gain * 1.02);
    plot.y_min = std::min(plot.y_min, r.gain * 0.98);
  }
  t.print(std::cout);
  if (!res.methods.empty()) report_methods(res, plot);
  write_outputs(a, req, res.to_json(a.trace), plot);
  return 0;
}

}  // namespace

AllocationCommand add_allocation(CLI::App* oracle, const Global& g) {
  auto a = std::make_shared<AllocationArgs>();
  CLI::App* cmd = oracle->add_subcommand(
      "allocation",
      "exact optima when KV heads and layers share one budget (per layer, layerwise, the whole model; floors, "
      "pages), against per-head budgets of the same total: compressing the prompt once (--protocol prefill), "
      "evicting at every step (--protocol decoding) or compressing every N steps (--protocol decoding --interval)");
  cmd->add_option("trace", a->trace, "trace file (.safetensors)")->required()->check(CLI::ExistingFile);
  a->request.add(cmd);
  cmd->add_option("--json", a->json, "write the rows (with each unit's slots) and the request as JSON");
  cmd->add_option("--plot", a->plot, "write an SVG plot of each scope's gain against the budget");
  return {cmd, [a, &g] { return run_allocation(*a, g); }};
}

}  // namespace kvo::cli
