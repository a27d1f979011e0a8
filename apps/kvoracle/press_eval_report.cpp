#include "press_eval_report.hpp"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/model/press_eval.hpp"
#include "kvo/proofs_check/svg_plot.hpp"
#include "kvo/scaleout/team.hpp"
#include "model_options.hpp"
#include "table.hpp"

namespace kvo::cli {

int run_press_eval(const PressEvalArgs& a, const Global& g) {
  model::PressEvalOptions o;
  o.tokens = a.tokens;
  o.prompt_len = a.prompt_len;
  o.presses = a.press.build();
  o.reference_ratios = a.press.ratio_list();
  o.policies = a.policies;
  o.policy_ratios = a.press.ratio_list();
  o.run = a.run;
  const std::string text = read_text(a.text);
  const model::Llama m = load_model(a.model);
  Progress bar("eval --prefill", model::press_eval_rows(o), !g.quiet);
  o.on_row = [&bar] { bar.tick(); };
  const model::PressEvalResult r = model::evaluate_presses(m, text, o);
  bar.finish();
  const int following = r.tokens - r.prompt_len;
  std::cout << "kvoracle eval --prefill " << r.prompt_len << " " << a.text << ": prompt " << r.prompt_len
            << " tokens compressed once, " << following << " continuation tokens teacher-forced, full-cache NLL "
            << fmt(r.full_nll) << "\n"
            << "optimum: the k prompt keys with the most attention mass from the continuation's queries "
               "(look-ahead); optimum_output_bound: the minimiser of the certified output-error bound\n";
  Table t({"set", "compression", "mean k", "mass of optimum", "output error", "NLL", "vs full", "mean KL", "K/V MiB"});
  nlohmann::json rows = nlohmann::json::array();
  LinePlot plot;
  plot.title = "KL(full || compressed) against the prompt share kept (" + std::to_string(r.prompt_len) + " + " +
               std::to_string(following) + " tokens)";
  plot.x_label = "prompt keys kept per (layer, KV head) / P";
  plot.y_label = "mean KL of the continuation";
  plot.y_max = 0.0;
  for (const auto& row : r.rows) {
    t.row({row.name, fmt(row.compression_ratio, 3), fmt(row.mean_k, 4), fmt(row.mass_fraction), fmt(row.output_error),
           fmt(row.nll), (row.nll >= r.full_nll ? "+" : "") + fmt(row.nll - r.full_nll), fmt(row.mean_kl),
           fmt(static_cast<double>(row.kv_bytes) / (1 << 20), 3)});
    rows.push_back({{"set", row.name},
                    {"compression_ratio", row.compression_ratio},
                    {"mean_k", row.mean_k},
                    {"mass_fraction", row.mass_fraction},
                    {"output_error", row.output_error},
                    {"nll", row.nll},
                    {"mean_kl", row.mean_kl},
                    {"kv_bytes", row.kv_bytes}});
    plot.add_point(row.name, row.mean_k / r.prompt_len, row.mean_kl, row.set != model::PressEvalSet::Press);
    plot.y_max = std::max(plot.y_max, row.mean_kl * 1.05);
  }
  if (plot.y_max <= 0) plot.y_max = 1.0;
  t.print(std::cout);
  if (!a.json.empty()) {
    write_file_atomic(a.json, nlohmann::json{{"text", a.text},
                                             {"tokens", r.tokens},
                                             {"prompt_len", r.prompt_len},
                                             {"full_nll", r.full_nll},
                                             {"full_bytes", r.full_bytes},
                                             {"rows", rows}}
                                      .dump(2) +
                                  "\n");
    std::cout << "results: " << a.json << '\n';
  }
  if (!a.plot.empty()) {
    write_file_atomic(a.plot, plot.svg());
    std::cout << "plot: " << a.plot << '\n';
  }
  return 0;
}

}  // namespace kvo::cli
