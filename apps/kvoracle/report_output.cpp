#include "report_output.hpp"

#include <iostream>

#include "kvo/core/atomic_file.hpp"

namespace kvo::cli {

void print_report(const Report& report, const std::string& plot_path, const std::string& json_path,
                  const std::function<std::string()>& json_text) {
  std::cout << report.text();
  if (!plot_path.empty()) {
    write_file_atomic(plot_path, report.plots().at(0).svg);
    std::cout << "plot: " << plot_path << '\n';
  }
  if (!json_path.empty()) {
    write_file_atomic(json_path, json_text());
    std::cout << "results: " << json_path << '\n';
  }
}

}  // namespace kvo::cli
