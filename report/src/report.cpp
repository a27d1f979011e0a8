#include "kvo/report/report.hpp"

namespace kvo {

void Report::line(std::string text) { blocks_.push_back({std::move(text), -1}); }

Table& Report::table(std::vector<std::string> header) {
  blocks_.push_back({"", static_cast<int>(tables_.size())});
  return tables_.emplace_back(std::move(header));
}

void Report::plot(std::string name, std::string svg) { plots_.push_back({std::move(name), std::move(svg)}); }

void Report::append(const Report& other) {
  const int shift = static_cast<int>(tables_.size());
  for (const Block& b : other.blocks_) blocks_.push_back({b.line, b.table < 0 ? -1 : b.table + shift});
  tables_.insert(tables_.end(), other.tables_.begin(), other.tables_.end());
  plots_.insert(plots_.end(), other.plots_.begin(), other.plots_.end());
}

std::string Report::text() const {
  std::string out;
  for (const Block& b : blocks_) out += b.table < 0 ? b.line + '\n' : tables_[static_cast<size_t>(b.table)].text();
  return out;
}

std::string Report::markdown() const {
  std::string out;
  for (const Block& b : blocks_) {
    if (!out.empty()) out += '\n';
    out += b.table < 0 ? b.line + '\n' : tables_[static_cast<size_t>(b.table)].markdown();
  }
  return out;
}

nlohmann::json Report::to_json() const {
  nlohmann::json tables = nlohmann::json::array(), plots = nlohmann::json::array();
  for (const Table& t : tables_) tables.push_back(t.to_json());
  for (const ReportPlot& p : plots_) plots.push_back(p.name);
  return {{"text", text()}, {"tables", std::move(tables)}, {"plots", std::move(plots)}};
}

}  // namespace kvo
