#include "kvo/proofs_check/report_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numbers>
#include <sstream>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/error.hpp"
#include "kvo/report/svg_plot.hpp"

namespace kvo {
namespace {

std::string cell_number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// Pipes would end a Markdown table cell.
std::string md_cell(const std::string& text) {
  std::string o;
  for (char c : text) {
    if (c == '|') o += '\\';
    o += c;
  }
  return o;
}

std::string verdict(const ClaimSummary& s) {
  const std::string of = std::to_string(s.holding) + " of " + std::to_string(s.records);
  if (s.kind == ClaimKind::Theorem)
    return s.holding == s.records ? "holds (" + std::to_string(s.records) + ")"
                                  : "**FAILS** on " + std::to_string(s.records - s.holding) + " of " +
                                        std::to_string(s.records) + " (kvoracle bug)";
  if (s.kind == ClaimKind::Defect)
    return s.holding == s.records
               ? "not shown (" + of + " as published)"
               : "shown on " + std::to_string(s.records - s.holding) + " of " + std::to_string(s.records);
  return "paper's statement holds on " + of;
}

double median(std::vector<double> v) {
  std::erase_if(v, [](double x) { return !std::isfinite(x); });
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// E1-E3 per layer: the paper states E1 of "almost all layers", so the report shows layers.
void observations_by_layer(std::ostringstream& o, const CheckRecords& report) {
  struct Layer {
    std::vector<double> sparsity, alpha, tail_share, rho, rho_given_frequency;
    int sparse = 0, e1 = 0, consistent = 0, e2 = 0;
  };
  std::map<int, Layer> layers;
  for (const auto& r : report.records()) {
    if (r.id != "E1" && r.id != "E2" && r.id != "E3") continue;
    Layer& l = layers[r.layer];
    const auto& d = r.detail;
    if (r.id == "E1") {
      l.sparsity.push_back(r.metric);
      l.sparse += r.holds ? 1 : 0;
      ++l.e1;
    } else if (r.id == "E2") {
      ++l.e2;
      l.consistent += r.holds ? 1 : 0;
      if (d.contains("alpha")) {
        l.alpha.push_back(d["alpha"].get<double>());
        l.tail_share.push_back(d["n_tail"].get<double>() / d["n"].get<double>());
      }
    } else {
      auto value = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : NAN; };
      l.rho.push_back(value(d["rho"]));
      l.rho_given_frequency.push_back(value(d["rho_given_frequency"]));
    }
  }
  if (layers.empty()) return;
  o << "\n## The paper's observations per layer (E1-E3)\n\n"
       "| layer | E1 mean sparsity | E1 heads > 95% | E2 heads consistent with a power law | E2 median alpha | "
       "E2 median tail share | E3 median rho | E3 median rho given frequency |\n"
       "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& [layer, l] : layers) {
    double mean = 0.0;
    for (double s : l.sparsity) mean += s / static_cast<double>(l.sparsity.size());
    o << "| " << layer << " | " << (l.e1 ? cell_number(mean) : "-") << " | "
      << (l.e1 ? std::to_string(l.sparse) + " of " + std::to_string(l.e1) : "-") << " | "
      << (l.e2 ? std::to_string(l.consistent) + " of " + std::to_string(l.e2) : "-") << " | "
      << cell_number(median(l.alpha)) << " | " << cell_number(median(l.tail_share)) << " | "
      << cell_number(median(l.rho)) << " | " << cell_number(median(l.rho_given_frequency)) << " |\n";
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> report_plots(const TraceChecksResult& r) {
  std::vector<std::pair<std::string, std::string>> out;
  const double line = 1.0 - 1.0 / std::numbers::e;
  LinePlot ratio;
  ratio.title = "median over heads of rho_i = A_i(S_i) / max_{|S|<=k} A_i(S), budget " + r.budget;
  ratio.x_label = "step i";
  ratio.y_label = "rho_i";
  ratio.y_min = 0.0;
  ratio.y_max = 1.05;
  ratio.lines.push_back({"1 - 1/e", line});
  for (size_t x = 0; x < r.series.size(); ++x) {
    const auto& s = r.series[x];
    PlotSeries ps{s.policy, {}, {}, false, static_cast<int>(x)};
    for (size_t i = 0; i < s.rho_median.size(); ++i) {
      ps.x.push_back(static_cast<double>(i));
      ps.y.push_back(s.rho_median[i]);
    }
    ratio.series.push_back(std::move(ps));
  }
  // (1 - alpha)(1 - 1/e) at each policy's alpha_hat, dashed in the policy's colour (skipped at
  // alpha = 0, where it is the 1 - 1/e line, and near alpha = 1, where it is 0).
  const double n_steps = r.series.empty() ? 1.0 : static_cast<double>(r.series.front().rho_median.size() - 1);
  for (size_t x = 0; x < r.series.size(); ++x) {
    const auto& s = r.series[x];
    if (s.alpha_hat <= 0 || s.alpha_hat > 0.999) continue;
    const double y = (1 - s.alpha_hat) * line;
    ratio.series.push_back(
        {"(1-a)(1-1/e), a=" + cell_number(s.alpha_hat), {0.0, n_steps}, {y, y}, true, static_cast<int>(x)});
  }
  out.emplace_back("ratio.svg", ratio.svg(980, 520));
  for (size_t g = 0; g < r.grids.size(); ++g) {
    HeatMap hm;
    hm.title = r.grids[g].title + (g == 0 ? " (log10)" : "");
    hm.row_label = "layer";
    hm.col_label = "head";
    hm.value = r.grids[g].value;
    hm.log_scale = g == 0;
    out.emplace_back(g == 0 ? "gamma.svg" : "theta.svg", hm.svg());
  }
  if (!r.sweep.empty()) {
    LinePlot b;
    b.title = "retained attention mass a_i(S_i) against budget (mean over steps and the swept heads)";
    b.x_label = "budget (fraction of n)";
    b.y_label = "retained mass";
    b.y_min = 0.0;
    b.y_max = 1.0;
    std::vector<std::string> names;  // policies first (same colours as the ratio plot), optima last
    for (const auto& s : r.series) names.push_back(s.policy);
    names.push_back("static optimum");
    names.push_back("OPT_dyn");
    double lowest = 1.0;
    for (const auto& p : r.sweep) lowest = std::min(lowest, p.retained_mass);
    b.y_min = std::max(0.0, std::floor(lowest * 10.0) / 10.0);
    for (const auto& n : names) {
      const bool optimum = n == "static optimum" || n == "OPT_dyn";
      PlotSeries s{n, {}, {}, optimum, -1};
      for (const auto& p : r.sweep)
        if (p.policy == n) {
          s.x.push_back(p.budget);
          s.y.push_back(p.retained_mass);
        }
      if (!s.x.empty()) b.series.push_back(std::move(s));
    }
    out.emplace_back("budget.svg", b.svg(980, 520));
  }
  return out;
}

std::vector<std::string> other_papers_lines(const std::vector<ClaimSummary>& summaries) {
  std::vector<std::string> out;
  std::string last;
  for (const auto& s : summaries) {
    const ClaimInfo& c = claim_info(s.id);
    if (c.paper == "h2o") continue;
    if (s.id != last) {
      const PaperInfo& p = paper_info(c.paper);
      out.push_back(s.id + " · " + p.name + " (" + p.reference + "): \"" + c.statement + "\"");
      out.push_back("  checked: " + c.title);
      last = s.id;
    }
    out.push_back("  " + s.variant + ": " + verdict(s) + "; " + c.metric + " median " + cell_number(s.median) +
                  ", worst " + cell_number(s.worst) + " (" + s.where + ")");
  }
  return out;
}

std::string report_markdown(const TraceChecksResult& r, const nlohmann::json& meta) {
  std::ostringstream o;
  o << "# kvoracle verify report\n\n";
  for (const auto& [k, v] : meta.items())
    o << "- " << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
  const long fails = r.report.theorem_failures();
  o << "\n**Theorems:** "
    << (fails == 0 ? "every theorem check holds." : std::to_string(fails) + " records FAIL (a bug in kvoracle).")
    << " Findings and defects are measurements of the paper's claims on this trace, never pass/fail.\n\n";
  o << "| claim | instance | kind | verdict | worst | where | median | metric |\n"
       "|---|---|---|---|---|---|---|---|\n";
  std::string last;
  for (const auto& s : r.report.summaries()) {
    const ClaimInfo& c = claim_info(s.id);
    const std::string claim =
        s.id == last ? "" : "**" + s.id + "** " + md_cell(c.title) + " (" + md_cell(c.source) + ")";
    last = s.id;
    o << "| " << claim << " | " << md_cell(s.variant) << " | " << to_string(s.kind) << " | " << verdict(s) << " | "
      << cell_number(s.worst) << " | " << s.where << " | " << cell_number(s.median) << " | " << md_cell(c.metric)
      << " |\n";
  }
  if (const auto lines = other_papers_lines(r.report.summaries()); !lines.empty()) {
    o << "\n## Other papers' claims, beside the authors' words\n\n";
    for (const auto& l : lines) o << (l.rfind("  ", 0) == 0 ? "  - " + l.substr(2) : "- " + l) << "\n";
  }
  o << "\n## Ratio per step\n\nrho_i against the 1-1/e line and (1-alpha)(1-1/e) at each policy's measured alpha:\n\n"
       "![ratio](ratio.svg)\n\n";
  o << "| policy | alpha_hat (max over heads) |\n|---|---|\n";
  for (const auto& s : r.series) o << "| " << s.policy << " | " << cell_number(s.alpha_hat) << " |\n";
  o << "\n## Universal conditions per layer and head\n\n![gamma](gamma.svg)\n\n![theta](theta.svg)\n";
  if (!r.sweep.empty()) {
    o << "\n## Retained mass against budget\n\n![budget](budget.svg)\n\n| series |";
    std::vector<double> budgets;
    std::vector<std::string> names;
    for (const auto& p : r.sweep) {
      if (std::find(budgets.begin(), budgets.end(), p.budget) == budgets.end()) budgets.push_back(p.budget);
      if (std::find(names.begin(), names.end(), p.policy) == names.end()) names.push_back(p.policy);
    }
    for (double b : budgets) o << " " << cell_number(100 * b) << "% |";
    o << "\n|---|";
    for (size_t x = 0; x < budgets.size(); ++x) o << "---:|";
    o << "\n";
    for (const auto& n : names) {
      o << "| " << n << " |";
      for (double b : budgets)
        for (const auto& p : r.sweep)
          if (p.policy == n && p.budget == b) o << " " << cell_number(p.retained_mass) << " |";
      o << "\n";
    }
  }
  observations_by_layer(o, r.report);
  // The constants of D.47/D.48 against what the measurements need, in log space.
  bool header = false;
  for (const auto& rec : r.report.records()) {
    const bool c24 = rec.id == "C24", c25 = rec.id == "C25";
    if (!c24 && !c25) continue;
    if (!header) {
      o << "\n## Constants of the loss lemmas (log10)\n\n"
           "| claim | instance | data | constant | measured need | log10(constant / need) | R | outside R > 10 |\n"
           "|---|---|---|---|---|---|---|---|\n";
      header = true;
    }
    const auto& d = rec.detail;
    auto text = [](const nlohmann::json& v) {
      return v.is_number() ? cell_number(v.get<double>()) : v.get<std::string>();
    };
    const std::string data = d.contains("data") ? d["data"].get<std::string>() : "-";
    const double R = d.value("R", 0.0);
    if (c24) {
      o << "| " << rec.id << " | " << md_cell(rec.variant) << " | " << data << " | "
        << cell_number(d.value("constant", 0.0)) << " | " << cell_number(d.value("needed", 0.0)) << " | "
        << text(d["log10_constant_over_needed"]) << " | " << cell_number(R) << " | " << (R <= 10 ? "yes" : "no")
        << " |\n";
    } else {
      o << "| C25 | Hessian Lipschitz n^2 e^{40R^2} | " << data << " | 10^"
        << cell_number(d.value("log10_hessian_bound", 0.0)) << " | 10^"
        << cell_number(d.value("log10_hessian_ratio", 0.0)) << " | "
        << cell_number(d.value("log10_hessian_bound", 0.0) - d.value("log10_hessian_ratio", 0.0)) << " | "
        << cell_number(R) << " | " << (R <= 10 ? "yes" : "no") << " |\n";
      o << "| C25 | 2 sqrt(n) R e^{R^2} | " << data << " | 10^" << cell_number(d.value("log10_u_bound", 0.0))
        << " | 10^" << cell_number(d.value("log10_u_ratio", 0.0)) << " | "
        << cell_number(d.value("log10_u_bound", 0.0) - d.value("log10_u_ratio", 0.0)) << " | " << cell_number(R)
        << " | " << (R <= 10 ? "yes" : "no") << " |\n";
    }
  }
  if (header)
    o << "\nTheorem D.49 assumes R > 10; every instance here has R <= 2 (w_i^2 >= 200 e^{R^2} makes R > 10 "
         "meaningless in fp64), so these rows test the lemmas' constants, not the theorem's regime.\n";
  o << "\nEvery record (claim x instance x layer x head) is in report.json; docs/report-format.md describes it.\n";
  return o.str();
}

std::vector<std::string> write_report(const std::string& dir, const TraceChecksResult& r, const nlohmann::json& meta) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  require(!ec && std::filesystem::is_directory(dir), "cannot create report directory '" + dir + "'");
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const std::string& content) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    write_file_atomic(path, content);
    written.push_back(path);
  };
  put("report.json", r.report.to_json(meta).dump(1) + "\n");
  put("report.md", report_markdown(r, meta));
  for (const auto& [name, svg] : report_plots(r)) put(name, svg);
  return written;
}

std::vector<CrossTraceSummary> cross_trace_summary(const std::vector<TraceReportEntry>& traces) {
  std::vector<CrossTraceSummary> out;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const auto& c : claim_catalogue())
    for (const auto& t : traces)
      for (const auto& s : t.summaries) {
        if (s.id != c.id) continue;
        auto [it, fresh] = index.emplace(std::make_pair(s.id, s.variant), out.size());
        if (fresh) out.push_back({s.id, s.variant, s.kind, 0, 0, 0, 0, s.worst, ""});
        CrossTraceSummary& x = out[it->second];
        const bool first = x.traces == 0;
        ++x.traces;
        x.traces_holding += s.holding == s.records ? 1 : 0;
        x.records += s.records;
        x.holding += s.holding;
        const bool worse = std::isnan(x.worst) || (c.higher_is_worse ? s.worst > x.worst : s.worst < x.worst);
        if (first || (!std::isnan(s.worst) && worse)) {
          x.worst = s.worst;
          x.where = t.name + ": " + s.where;
        }
      }
  return out;
}

std::string multi_report_markdown(const std::vector<TraceReportEntry>& traces) {
  std::ostringstream o;
  long fails = 0;
  for (const auto& t : traces) fails += t.theorem_failures;
  o << "# kvoracle verify report: " << traces.size() << " traces\n\n**Theorems:** "
    << (fails == 0 ? "every theorem check holds on every trace."
                   : std::to_string(fails) + " records FAIL (a bug in kvoracle).")
    << " Findings and defects are measurements of the paper's claims, never pass/fail.\n\n## Traces\n\n"
    << "| trace | file | n | layers x heads | budget | records | theorem failures | report |\n"
       "|---|---|---|---|---|---|---|---|\n";
  for (const auto& t : traces) {
    auto field = [&](const char* k) { return t.meta.contains(k) ? t.meta[k].dump() : std::string("-"); };
    o << "| " << md_cell(t.name) << " | " << md_cell(t.meta.value("trace", "")) << " | " << field("n") << " | "
      << field("layers") << " x " << field("heads") << " | " << md_cell(t.meta.value("budget", "")) << " | "
      << t.records << " | " << t.theorem_failures << " | [report](" << t.name << "/report.md) |\n";
  }
  o << "\n## Across traces\n\nPer claim and instance: traces on which every record holds, records holding, and "
       "the worst case over all traces.\n\n"
       "| claim | instance | kind | traces holding | records holding | worst | where | metric |\n"
       "|---|---|---|---|---|---|---|---|\n";
  std::string last;
  for (const auto& x : cross_trace_summary(traces)) {
    const ClaimInfo& c = claim_info(x.id);
    const std::string claim = x.id == last ? "" : "**" + x.id + "** " + md_cell(c.title);
    last = x.id;
    o << "| " << claim << " | " << md_cell(x.variant) << " | " << to_string(x.kind) << " | " << x.traces_holding
      << " of " << x.traces << " | " << x.holding << " of " << x.records << " | " << cell_number(x.worst) << " | "
      << md_cell(x.where) << " | " << md_cell(c.metric) << " |\n";
  }
  return o.str();
}

nlohmann::json multi_report_json(const std::vector<TraceReportEntry>& traces) {
  nlohmann::json jt = nlohmann::json::array(), js = nlohmann::json::array();
  long fails = 0;
  for (const auto& t : traces) {
    fails += t.theorem_failures;
    jt.push_back({{"name", t.name},
                  {"report", t.name + "/report.json"},
                  {"meta", t.meta},
                  {"records", t.records},
                  {"theorem_failures", t.theorem_failures}});
  }
  for (const auto& x : cross_trace_summary(traces))
    js.push_back({{"id", x.id},
                  {"variant", x.variant},
                  {"kind", to_string(x.kind)},
                  {"traces", x.traces},
                  {"traces_holding", x.traces_holding},
                  {"records", x.records},
                  {"holding", x.holding},
                  {"worst", x.worst},
                  {"where", x.where}});
  return {{"format", "kvoracle-multi-report"},
          {"format_version", 1},
          {"theorem_failures", fails},
          {"traces", jt},
          {"summary", js}};
}

}  // namespace kvo
