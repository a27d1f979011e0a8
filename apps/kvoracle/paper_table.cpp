#include "paper_table.hpp"

#include "table.hpp"

namespace kvo::cli {

void print_paper_experiments(const std::vector<CheckRecord>& records, std::ostream& os) {
  if (records.empty()) return;
  const nlohmann::json& first = records.front().detail;
  os << "The paper's experiments (findings, docs/checks.md#" << (first.contains("tolerance") ? "e4" : "e10");
  if (first.contains("tolerance"))
    os << "; loss: vs the full cache " << first.value("metric", "") << ", comparable within "
       << fmt(first.value("tolerance", 0.0));
  os << "):\n";
  Table t({"claim", "variant", "budget", "paper holds", "metric", "rows"});
  for (const CheckRecord& r : records) {
    std::string rows;
    for (const auto& [key, value] : r.detail.items())
      if (value.is_number_float() && key != "budget" && key != "tolerance")
        rows.append(rows.empty() ? "" : ", ").append(key + " " + fmt(value.get<double>()));
    t.row({r.id, r.variant, r.detail.value("budget_label", ""), r.holds ? "yes" : "no", fmt(r.metric), rows});
  }
  t.print(os);
}

}  // namespace kvo::cli
