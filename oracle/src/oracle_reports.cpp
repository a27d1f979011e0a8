// The reports of `oracle static`, `oracle offline` and `oracle prefill`: what each result shows a
// reader, as tables of exact numbers (kvo/report/report.hpp).
#include <map>
#include <tuple>

#include "kvo/core/press.hpp"
#include "kvo/oracle/offline_run.hpp"
#include "kvo/oracle/prefill_run.hpp"
#include "kvo/oracle/static_run.hpp"

namespace kvo {

Report StaticOracleResult::report(const std::string& trace) const {
  std::map<int, std::tuple<int, long, double, int>> per_layer;  // solves, inexact, sum of final values, heads
  for (const StaticOracleHead& head : heads) {
    auto& [solves, inexact, final_value, nh] = per_layer[head.layer];
    for (const auto& s : head.solves) {
      ++solves;
      inexact += s.solution.exact ? 0 : 1;
    }
    if (!head.solves.empty()) final_value += head.solves.back().solution.value;
    ++nh;
  }
  Report out;
  out.line("static optimum of " + objective + " on " + trace + " (budget " + budget + ")");
  Table& t = out.table({"layer", "heads", "solves", "inexact", "mean OPT at the last step"});
  for (const auto& [l, v] : per_layer) {
    const auto& [solves, inexact, final_value, nh] = v;
    t.row({integer(l), integer(nh), integer(solves), integer(inexact), decimal(final_value / nh)});
  }
  return out;
}

Report OfflineOracleResult::report() const {
  const double nh = static_cast<double>(heads.size());
  Report out;
  out.line("offline optimum of the retained dense mass on " + trace + " (n = " + std::to_string(n_tokens) +
           ", budget " + budget + ", forced window " + std::to_string(forced_window) + ", " +
           std::to_string(heads.size()) + " heads)");
  out.line("mean per head: OPT_dyn = " + fmt(opt_dyn_sum / nh) + ", sum_i opt_i = " + fmt(static_sum / nh) +
           ", OPT_dyn / sum_i opt_i = " + fmt(opt_dyn_sum / static_sum));
  Table& t = out.table(
      {"policy", "nested", "mean value", "mean ratio", "worst head ratio", "max excess over OPT_dyn", "ordering"});
  size_t unchecked = 0;
  for (const OfflinePolicySummary& p : policies) {
    unchecked += p.outside.empty() ? 0 : 1;
    t.row({p.policy, p.nested ? "yes" : "no", decimal(p.mean_value), decimal(p.mean_ratio), decimal(p.worst_ratio),
           p.max_excess > 0 ? decimal(p.max_excess) : Cell("-"),
           p.outside.empty() ? "checked" : "not checked: " + p.outside});
  }
  out.line("ordering policy <= OPT_dyn <= sum_i opt_i (for the " + std::to_string(policies.size() - unchecked) +
           " policies inside OPT_dyn's problem) and dual certificates: " + std::to_string(violations) +
           (violations ? " violations [FAILS: bug in kvoracle]" : " violations [holds]"));
  return out;
}

Report PrefillOracleResult::report(const PrefillOracleRequest& request, const std::string& trace) const {
  Report out;
  out.line("prefill compression of " + trace + ": prompt " + std::to_string(request.prompt_len) + " tokens, " +
           std::to_string(following) + " following queries, " + std::to_string(layers.size()) + " layers x " +
           std::to_string(kv_heads) + " KV heads");
  out.line(
      "objective: the following queries' attention mass on the kept prompt keys (mean over each KV head's "
      "group); optimum: the k heaviest prompt keys (exact, LP-dual certified)");
  if (request.output_fidelity && !fidelity)
    out.line("output error: not measured, a layer of the trace holds no values (dense attention only)");
  if (fidelity)
    out.line(
        "output error: |o_t(kept) - o_t(full)|, mean over the following queries and the group; "
        "references at the same k: the mass optimum and the minimiser of the bound E <= B (docs/presses.md)");
  Table& t =
      out.table({"press", "compression", "mean k", "mean of optimum", "worst unit", "where", "mean overlap with opt",
                 "mean prompt mass kept", "optimum's", "output error", "mass opt's", "bound opt's"});
  const auto measured = [this](double v) { return fidelity ? decimal(v) : Cell("-"); };
  for (const PrefillPressSummary& s : summary)
    t.row({press_name(s.press), decimal(s.compression_ratio, 3), decimal(s.mean_k, 4), decimal(s.fraction),
           decimal(s.worst), s.where, decimal(s.overlap), decimal(s.share), decimal(s.optimum_share),
           measured(s.output_error), measured(s.mass_optimum_error), measured(s.bound_optimum_error)});
  return out;
}

}  // namespace kvo
