// The reports of `oracle allocation`: the rows of each protocol with the ratios a reader compares
// (gain over per-head budgets, pages' cost, vs peak / vs mean), each row's certificate, and a plot.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "kvo/oracle/shared_decoding.hpp"
#include "kvo/oracle/shared_prefill.hpp"
#include "kvo/report/svg_plot.hpp"

namespace kvo {
namespace {

constexpr const char* kPlotName = "allocation.svg";

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

// Periodic compression: each scope's optimum at every target and interval, against the same
// scope's every-step optimum with a cache of the periodic one's peak and mean size.
Report periodic_report(const SharedDecodingResult& res, const AllocationRequest& req, const std::string& trace) {
  Report out;
  out.line("periodic compression on " + trace + ": n = " + std::to_string(res.n) + ", " +
           std::to_string(res.layers.size()) + " layers x " + std::to_string(res.kv_heads) + " KV heads, prompt " +
           std::to_string(req.prompt_len) + " steps, recent window " + req.recent + " per unit");
  out.line(
      "objective: retained attention mass at every step, summed over units; the cache grows by one token a "
      "step and is compressed to the target after every interval-th decoding step; every row the exact "
      "offline optimum, certified by its LP dual (with both references); vs peak / vs mean: over compression "
      "after every decoding "
      "step with queries seeing the periodic cache's peak (target + interval) / mean (target + (interval "
      "+ 1) / 2) size");
  Table& t = out.table({"scope", "target", "interval", "recent", "mass kept", "gain", "certified", "peak k", "vs peak",
                        "mean k", "vs mean"});
  LinePlot plot;
  plot.title = "periodic compression: retained mass over compression at every step with the same peak cache";
  plot.x_label = "compression interval (decoding steps)";
  plot.y_label = "mass kept / every-step optimum at the peak size";
  plot.y_min = plot.y_max = 1.0;
  for (const SharedDecodingRow& r : res.rows) {
    const double vs_peak = r.peak_value > 0 ? r.value / r.peak_value : 1.0;
    t.row({budget_scope_name(r.scope), integer(r.k), integer(r.interval), integer(r.recent),
           decimal(r.value / r.total_mass), decimal(r.gain), certified_with_references(r), integer(r.peak_k),
           decimal(vs_peak), integer(r.mean_k), decimal(r.mean_value > 0 ? r.value / r.mean_value : 1.0)});
    plot.add_point(budget_scope_name(r.scope) + ", target " + std::to_string(r.k), r.interval, vs_peak,
                   r.scope == BudgetScope::Head);
    plot.y_min = std::min(plot.y_min, vs_peak * 0.98);
    plot.y_max = std::max(plot.y_max, vs_peak * 1.02);
  }
  out.plot(kPlotName, plot.svg());
  return out;
}

// kvpress's allocating presses: what each keeps, split into its choice of keys at its own counts
// and its counts against its scope's best and any allocation's best at the same memory.
void add_methods(const SharedPrefillResult& res, Report& out, LinePlot& plot) {
  constexpr double kMethodsPlotFloor =
      0.8;  // a press that keeps a sliver (snapkv with k < window) would flatten the scopes
  out.line(
      "\nkvpress's presses and their allocations, against the optimum with the same memory (mass kept: of "
      "the prompt's mass; at its counts: the best keys with the press's own counts per unit; its scope's "
      "best: the best counts where the press may move them; any allocation: the best over the whole model)");
  Table& t = out.table({"method", "compression", "scope", "k", "floor", "mass kept", "at its counts",
                        "its scope's best", "any allocation", "per-head optimum", "keys' share", "counts' share",
                        "certified", "slots min", "slots max"});
  for (const AllocationMethodRow& m : res.methods) {
    const auto share = [&](double x) { return m.prompt_mass > 0 ? decimal(x / m.prompt_mass) : Cell("-"); };
    const auto ratio = [](double x, double y) { return y > 0 ? decimal(x / y) : integer(1); };
    const std::string c = certified(m.scope_optimum, m.scope_upper);
    t.row({m.method, decimal(m.compression_ratio, 3), budget_scope_name(m.scope), integer(m.k), integer(m.floor),
           share(m.value), share(m.at_counts), share(m.scope_optimum), share(m.best), share(m.per_head),
           ratio(m.value, m.at_counts), ratio(m.at_counts, m.scope_optimum),
           c == "yes" ? certified(m.best, m.best_upper) : c, integer(m.min_slots), integer(m.max_slots)});
    const double gain = m.per_head > 0 ? m.value / m.per_head : 1.0;
    plot.add_point(m.method, static_cast<double>(m.k) / res.prompt_len, gain, true);
    plot.y_min = std::min(plot.y_min, std::max(kMethodsPlotFloor, gain * 0.98));  // the table has what is clipped
  }
}

}  // namespace

Report SharedDecodingResult::report(const AllocationRequest& req, const std::string& trace) const {
  if (req.periodic()) return periodic_report(*this, req, trace);
  Report out;
  out.line("shared budgets on " + trace + ", decoding: n = " + std::to_string(n) + ", " +
           std::to_string(layers.size()) + " layers x " + std::to_string(kv_heads) + " KV heads, recent window " +
           req.recent + " per unit");
  out.line(
      "objective: retained attention mass at every step (mean over each KV head's group), summed over "
      "units; irreversible eviction; every row the exact offline optimum, certified by its LP dual; gain: "
      "over per-head budgets in the same page size; pages' cost: over the same scope in tokens");
  Table& t = out.table({"scope", "page", "k per unit", "recent", "mass kept", "per-head's", "gain", "pages' cost",
                        "certified", "held min", "held max"});
  LinePlot plot;
  plot.title = "decoding: retained mass of shared capacity over per-head budgets (exact offline optima)";
  plot.x_label = "budget per unit (k / n)";
  plot.y_label = "gain over per-head budgets";
  plot.y_min = plot.y_max = 1.0;
  for (const SharedDecodingRow& r : rows) {
    t.row({budget_scope_name(r.scope), integer(r.page_size), integer(r.k), integer(r.recent),
           decimal(r.value / r.total_mass), decimal(r.per_head_value / r.total_mass), decimal(r.gain),
           r.token_value > 0 ? decimal(r.value / r.token_value) : Cell("-"), certified(r.value, r.upper),
           integer(r.min_held), integer(r.max_held)});
    plot.add_point(plot_series(r.scope, r.page_size), static_cast<double>(r.k) / n, r.gain,
                   r.scope == BudgetScope::Head);
    plot.y_max = std::max(plot.y_max, r.gain * 1.02);
    plot.y_min = std::min(plot.y_min, r.gain * 0.98);
  }
  out.plot(kPlotName, plot.svg());
  return out;
}

Report SharedPrefillResult::report(const AllocationRequest& req, const std::string& trace) const {
  Report out;
  out.line("shared budgets on " + trace + ": prompt " + std::to_string(prompt_len) + " tokens, " +
           std::to_string(following) + " following queries, " + std::to_string(layers.size()) + " layers x " +
           std::to_string(kv_heads) + " KV heads, floor " + req.floor);
  out.line(
      "objective: the following queries' attention mass on the kept prompt keys, summed over units; every "
      "row is exact (Lagrangian bound = value) with the same total as per-head budgets of k; gain: over per-head "
      "token budgets; pages' cost: over the same scope with tokens");
  Table& t = out.table({"scope", "page", "compression", "k per unit", "floor", "mass kept", "per-head's", "gain",
                        "pages' cost", "certified", "slots min", "slots max", "units at floor"});
  LinePlot plot;
  plot.title = "prefill: retained mass of shared budgets over per-head budgets (exact optima)";
  plot.x_label = "share of the prompt kept per unit (k / P)";
  plot.y_label = "gain over per-head budgets";
  plot.y_min = 1.0;
  plot.y_max = 1.0;
  for (const SharedPrefillRow& r : rows) {
    const double share = r.prompt_mass > 0 ? r.value / r.prompt_mass : 1.0;
    const double head_share = r.prompt_mass > 0 ? r.per_head_value / r.prompt_mass : 1.0;
    const bool head = r.scope == BudgetScope::Head;
    t.row({budget_scope_name(r.scope), integer(r.page_size), decimal(r.compression_ratio, 3), integer(r.k),
           head ? Cell("-") : integer(r.floor), decimal(share), decimal(head_share), decimal(r.gain),
           r.token_value > 0 ? decimal(r.value / r.token_value) : Cell("-"), certified(r.value, r.upper),
           integer(r.min_slots), integer(r.max_slots), head ? Cell("-") : integer(r.at_floor)});
    plot.add_point(plot_series(r.scope, r.page_size), static_cast<double>(r.k) / prompt_len, r.gain,
                   r.scope == BudgetScope::Head);
    plot.y_max = std::max(plot.y_max, r.gain * 1.02);
    plot.y_min = std::min(plot.y_min, r.gain * 0.98);
  }
  if (!methods.empty()) add_methods(*this, out, plot);
  out.plot(kPlotName, plot.svg());
  return out;
}

}  // namespace kvo
