#include "press_eval_report.hpp"

#include <iostream>

#include "kvo/core/atomic_file.hpp"
#include "kvo/core/progress.hpp"
#include "model_options.hpp"

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
  const Report report = studies::press_eval_report(r, text_path);
  std::cout << report.text();
  if (!json_path.empty()) {
    write_file_atomic(json_path, studies::press_eval_result_json(r, text_path).dump(2) + "\n");
    std::cout << "results: " << json_path << '\n';
  }
  if (!plot_path.empty()) {
    write_file_atomic(plot_path, report.plots().at(0).svg);
    std::cout << "plot: " << plot_path << '\n';
  }
  return 0;
}

}  // namespace kvo::cli
