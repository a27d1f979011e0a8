// The reports of the closed-loop studies: eval, eval prefill, eval diversity and tasks, each the
// table a reader compares rows in (with the ratios to the full cache), the paper's experiments the
// rows allow, and the plots.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "kvo/core/policy_registry.hpp"
#include "kvo/core/text_list.hpp"
#include "kvo/proofs_check/paper_experiments.hpp"
#include "kvo/report/svg_plot.hpp"
#include "kvo/studies/diversity.hpp"
#include "kvo/studies/eval_run.hpp"
#include "kvo/studies/press_eval_run.hpp"
#include "kvo/studies/task_comparisons.hpp"
#include "kvo/studies/task_io.hpp"

namespace kvo::studies {
namespace {

double mib(long long bytes) { return static_cast<double>(bytes) / (1 << 20); }

// Accuracy against budget, one plot per task and length, one line per row.
void add_accuracy_plots(const TaskEvalResult& r, Report& out) {
  std::map<std::pair<std::string, int>, LinePlot> plots;
  for (const TaskCell& c : summarize_tasks(r)) {
    LinePlot& p = plots[{c.task, c.length}];
    p.title = c.task + ", " + std::to_string(c.length) + " tokens: accuracy against budget (" +
              std::string(to_string(r.protocol)) + ")";
    p.x_label = "share of tokens kept";
    p.y_label = "accuracy";
    if (c.row == kFullCacheRow) {
      if (p.lines.empty()) p.lines.push_back({"full cache", c.accuracy});
      continue;
    }
    p.add_point(c.row, c.budget, c.accuracy,
                c.row.starts_with(kPrefillOptimumRow) || c.row == policy_name(PolicyId::Oracle));
  }
  for (const auto& [key, p] : plots)
    out.plot("accuracy-" + key.first + "-" + std::to_string(key.second) + ".svg", p.svg());
}

// Length x depth heat maps per row and budget (tasks with depths).
void add_depth_maps(const TaskEvalResult& r, Report& out) {
  std::map<std::tuple<std::string, std::string, double>, std::map<std::pair<int, double>, double>> grids;
  for (const TaskCell& c : summarize_tasks(r, true))
    if (c.depth >= 0) grids[{c.task, c.row, c.budget}][{c.length, c.depth}] = c.accuracy;
  for (const auto& [key, grid] : grids) {
    std::vector<int> lengths;
    std::vector<double> depths;
    for (const auto& [cell, acc] : grid) {
      if (std::find(lengths.begin(), lengths.end(), cell.first) == lengths.end()) lengths.push_back(cell.first);
      if (std::find(depths.begin(), depths.end(), cell.second) == depths.end()) depths.push_back(cell.second);
    }
    std::sort(depths.begin(), depths.end());
    std::vector<std::string> length_names;
    for (int n : lengths) length_names.push_back(std::to_string(n));
    HeatMap h;
    const auto& [task, row, budget] = key;
    h.title = task + " / " + row + " at " + fmt(budget, 3) + ": accuracy by length (rows: " + join_list(length_names) +
              ") and depth (columns: " + join_numbers(depths) + ")";
    h.row_label = "length";
    h.col_label = "depth";
    for (int n : lengths) {
      std::vector<double> line;
      for (double d : depths) {
        const auto it = grid.find({n, d});
        line.push_back(it == grid.end() ? NAN : it->second);
      }
      h.value.push_back(line);
    }
    out.plot("depth-" + task + "-" + row + "-" + fmt(budget, 3) + ".svg", h.svg());
  }
}

}  // namespace

Report eval_report(const EvalResult& r, const std::string& text_name) {
  Report out;
  out.line("kvoracle eval " + text_name + ": " + std::to_string(r.tokens) +
           " tokens, teacher-forced, full-cache perplexity " + fmt(r.full_ppl) + " (" + fmt(mib(r.full_bytes), 3) +
           " MiB of K/V)" +
           (r.budget_scope == BudgetScope::Head ? "" : ", budgets shared per " + budget_scope_name(r.budget_scope)));
  Table& t = out.table({"policy", "budget", "k", "perplexity", "vs full", "mean KL", "peak K/V MiB", "of full"});
  LinePlot plot;
  plot.title =
      "perplexity against KV budget (" + std::to_string(r.tokens) + " tokens, full cache " + fmt(r.full_ppl) + ")";
  plot.x_label = "budget k (slots per layer and KV head) / n";
  plot.y_label = "perplexity";
  plot.y_min = r.full_ppl * 0.95;
  double worst = r.full_ppl;
  for (const auto& p : r.points) worst = std::max(worst, p.ppl);
  plot.y_max = std::min(worst * 1.05, r.full_ppl * 4);
  plot.lines.push_back({"full cache", r.full_ppl});
  for (const auto& p : r.points) {
    t.row({p.policy, p.budget, integer(p.k), decimal(p.ppl), decimal(p.ppl / r.full_ppl), decimal(p.mean_kl),
           decimal(mib(p.peak_bytes), 3),
           decimal(static_cast<double>(p.peak_bytes) / static_cast<double>(r.full_bytes), 3)});
    plot.add_point(p.policy, static_cast<double>(p.k) / r.tokens, p.ppl, policy_traits(p.id).offline);
  }
  add_paper_experiments(out, eval_paper_experiments(r));
  out.plot("perplexity.svg", plot.svg());
  return out;
}

Report press_eval_report(const PressEvalResult& r, const std::string& text_name) {
  const int following = r.tokens - r.prompt_len;
  Report out;
  out.line("kvoracle eval prefill " + text_name + ": prompt " + std::to_string(r.prompt_len) +
           " tokens compressed once, " + std::to_string(following) +
           " continuation tokens teacher-forced, full-cache NLL " + fmt(r.full_nll));
  out.line(
      "optimum: the k prompt keys with the most attention mass from the continuation's queries "
      "(look-ahead); optimum@layer|layerwise|model: the same with the budget shared (docs/allocation.md); "
      "optimum_output_bound: the minimiser of the certified output-error bound");
  Table& t = out.table({"set", "compression", "mean k", "mass of optimum", "prompt mass kept", "output error", "NLL",
                        "vs full", "mean KL", "K/V MiB"});
  LinePlot plot;
  plot.title = "KL(full || compressed) against the prompt share kept (" + std::to_string(r.prompt_len) + " + " +
               std::to_string(following) + " tokens)";
  plot.x_label = "prompt keys kept per (layer, KV head) / P";
  plot.y_label = "mean KL of the continuation";
  plot.y_max = 0.0;
  for (const auto& row : r.rows) {
    const double excess = row.nll - r.full_nll;
    t.row({row.name, decimal(row.compression_ratio, 3), decimal(row.mean_k, 4), decimal(row.mass_fraction),
           decimal(row.mass_share), decimal(row.output_error), decimal(row.nll),
           Cell(std::string(row.nll >= r.full_nll ? "+" : "").append(fmt(excess)), excess), decimal(row.mean_kl),
           decimal(mib(row.kv_bytes), 3)});
    plot.add_point(row.name, row.mean_k / r.prompt_len, row.mean_kl, row.set != PressEvalSet::Press);
    plot.y_max = std::max(plot.y_max, row.mean_kl * 1.05);
  }
  if (plot.y_max <= 0) plot.y_max = 1.0;
  out.plot("kl.svg", plot.svg());
  return out;
}

Report diversity_report(const DiversityResult& r, const std::string& text_name) {
  Report out;
  out.line("kvoracle eval diversity " + text_name + ": " + std::to_string(r.prompts) + " prompts of " +
           std::to_string(r.prompt_tokens) + " tokens, " + std::to_string(r.new_tokens) + " greedy tokens each");
  Table& t = out.table({"row", "budget", "words", "distinct-1", "distinct-2", "distinct-3", "4-gram repetition"});
  std::vector<const DiversityRow*> rows = {&r.full};
  for (const auto& row : r.rows) rows.push_back(&row);
  for (const DiversityRow* row : rows)
    t.row({row->row, decimal(row->budget, 3), integer(row->mean.words), decimal(row->mean.distinct1, 3),
           decimal(row->mean.distinct2, 3), decimal(row->mean.distinct3, 3), decimal(row->mean.repetition4, 3)});
  add_paper_experiments(out, diversity_paper_experiments(r));
  return out;
}

Report task_report(const TaskEvalResult& r) {
  Report out;
  Table& t = out.table(
      {"task", "length", "row", "budget", "n", "accuracy", "95% interval", "needles held", "mass of optimum", "note"});
  const auto mean = [](double x) { return std::isnan(x) ? Cell("-") : decimal(x, 3); };
  for (const TaskCell& c : summarize_tasks(r))
    t.row({c.task, integer(c.length), c.row, decimal(c.budget, 3), integer(c.count), decimal(c.accuracy, 3),
           std::string("[").append(fmt(c.low, 3)).append(", ").append(fmt(c.high, 3)).append("]"), mean(c.needles_held),
           mean(c.mass_of_optimum), c.model_fails ? "full cache fails: left out" : ""});
  add_task_comparisons(out, task_comparisons(r));
  add_paper_experiments(out, task_paper_experiments(r));
  add_accuracy_plots(r, out);
  add_depth_maps(r, out);
  return out;
}

}  // namespace kvo::studies
