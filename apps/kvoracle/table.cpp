#include "table.hpp"

#include <algorithm>
#include <cstdio>

namespace kvo::cli {

void Table::print(std::ostream& os) const {
  std::vector<size_t> w(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) w[c] = header_[c].size();
  for (const auto& r : rows_)
    for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < w.size(); ++c) {
      const std::string s = c < cells.size() ? cells[c] : "";
      os << (c ? "  " : "") << std::string(w[c] - s.size(), ' ') << s;
    }
    os << '\n';
  };
  line(header_);
  size_t total = 0;
  for (auto x : w) total += x + 2;
  os << std::string(total > 2 ? total - 2 : 0, '-') << '\n';
  for (const auto& r : rows_) line(r);
}

std::string fmt(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

}  // namespace kvo::cli
