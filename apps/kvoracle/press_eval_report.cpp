#include "press_eval_report.hpp"

#include <algorithm>
#include <iostream>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/progress.hpp"
#include "kvo/proofs_check/svg_plot.hpp"
#include "model_options.hpp"
#include "table.hpp"

namespace kvo::cli {

int print_press_eval(studies::PressEvalRequest request, const std::string& text_path, const std::string& model_path,
                     const std::string& json_path, const std::string& plot_path, const Global& g) {
  request.validate();
  const std::string text = read_text(text_path);
  const model::Llama m = load_model(model_path);
  Progress bar("eval prefill", studies::press_eval_rows(request.options()), !g.quiet);
  request.on_row = [&bar] { bar.tick(); };
  const studies::PressEvalResult r = studies::run_press_eval(m, text, request);
  bar.finish();
  const int following = r.tokens - r.prompt_len;
  std::cout << "kvoracle eval prefill " << text_path << ": prompt " << r.prompt_len << " tokens compressed once, "
            << following << " continuation tokens teacher-forced, full-cache NLL " << fmt(r.full_nll) << "\n"
            << "optimum: the k prompt keys with the most attention mass from the continuation's queries "
               "(look-ahead); optimum@layer|layerwise|model: the same with the budget shared (docs/allocation.md); "
               "optimum_output_bound: the minimiser of the certified output-error bound\n";
  Table t({"set", "compression", "mean k", "mass of optimum", "prompt mass kept", "output error", "NLL", "vs full",
           "mean KL", "K/V MiB"});
  LinePlot plot;
  plot.title = "KL(full || compressed) against the prompt share kept (" + std::to_string(r.prompt_len) + " + " +
               std::to_string(following) + " tokens)";
  plot.x_label = "prompt keys kept per (layer, KV head) / P";
  plot.y_label = "mean KL of the continuation";
  plot.y_max = 0.0;
  for (const auto& row : r.rows) {
    t.row({row.name, fmt(row.compression_ratio, 3), fmt(row.mean_k, 4), fmt(row.mass_fraction), fmt(row.mass_share),
           fmt(row.output_error), fmt(row.nll), (row.nll >= r.full_nll ? "+" : "") + fmt(row.nll - r.full_nll),
           fmt(row.mean_kl), fmt(static_cast<double>(row.kv_bytes) / (1 << 20), 3)});
    plot.add_point(row.name, row.mean_k / r.prompt_len, row.mean_kl, row.set != studies::PressEvalSet::Press);
    plot.y_max = std::max(plot.y_max, row.mean_kl * 1.05);
  }
  if (plot.y_max <= 0) plot.y_max = 1.0;
  t.print(std::cout);
  if (!json_path.empty()) {
    write_file_atomic(json_path, studies::press_eval_result_json(r, text_path).dump(2) + "\n");
    std::cout << "results: " << json_path << '\n';
  }
  if (!plot_path.empty()) {
    write_file_atomic(plot_path, plot.svg());
    std::cout << "plot: " << plot_path << '\n';
  }
  return 0;
}

}  // namespace kvo::cli
