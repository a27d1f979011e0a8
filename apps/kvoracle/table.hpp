// A plain-text table for terminal summaries: right-aligned numeric columns.
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace kvo::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void print(std::ostream& os) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fmt(double v, int precision = 4);

}  // namespace kvo::cli
