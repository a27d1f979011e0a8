#include "kvo/report/table.hpp"

#include <algorithm>
#include <cstdio>

namespace kvo {

std::string fmt(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

Cell decimal(double v, int precision) { return {fmt(v, precision), v}; }

Cell integer(long long v) { return {std::to_string(v), static_cast<double>(v)}; }

std::string Table::text() const {
  std::vector<size_t> w(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) w[c] = header_[c].size();
  for (const auto& r : rows_)
    for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].text.size());
  std::string out;
  auto line = [&](auto cell_text, size_t cells) {
    for (size_t c = 0; c < w.size(); ++c) {
      const std::string s = c < cells ? cell_text(c) : "";
      out.append(c ? "  " : "").append(w[c] - s.size(), ' ').append(s);
    }
    out += '\n';
  };
  line([&](size_t c) { return header_[c]; }, header_.size());
  size_t total = 0;
  for (auto x : w) total += x + 2;
  out.append(total > 2 ? total - 2 : 0, '-') += '\n';
  for (const auto& r : rows_) line([&](size_t c) { return r[c].text; }, r.size());
  return out;
}

std::string Table::markdown() const {
  std::string out;
  const auto cell = [&out](const std::string& s) {
    out += ' ';
    for (char ch : s) {
      if (ch == '|') out += '\\';
      out += ch;
    }
    out += " |";
  };
  out += '|';
  for (const auto& h : header_) cell(h);
  out += "\n|";
  for (size_t c = 0; c < header_.size(); ++c) out += "---|";
  out += '\n';
  for (const auto& r : rows_) {
    out += '|';
    for (size_t c = 0; c < header_.size(); ++c) cell(c < r.size() ? r[c].text : std::string());
    out += '\n';
  }
  return out;
}

nlohmann::json Table::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : rows_) {
    nlohmann::json row = nlohmann::json::object();
    for (size_t c = 0; c < header_.size() && c < r.size(); ++c)
      row[header_[c]] = r[c].value ? nlohmann::json(*r[c].value) : nlohmann::json(r[c].text);
    rows.push_back(std::move(row));
  }
  return {{"columns", header_}, {"rows", std::move(rows)}};
}

}  // namespace kvo
