#include "paper_table.hpp"

#include "table.hpp"

namespace kvo::cli {

void print_paper_experiments(const std::vector<CheckRecord>& records, std::ostream& os) {
  if (records.empty()) return;
  os << "The paper's experiments (findings, docs/checks.md#e4; loss: vs the full cache "
     << records.front().detail.value("metric", "") << ", comparable within "
     << fmt(records.front().detail.value("tolerance", 0.0)) << "):\n";
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
