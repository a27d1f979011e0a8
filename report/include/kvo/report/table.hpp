// A table of a result for people: a header and rows of cells, each cell its printed text and, when
// it is a number, the exact value behind it. Rendered for a terminal, as Markdown, or as JSON rows
// whose numbers are the exact values (what Python users read).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kvo {

struct Cell {
  std::string text;
  std::optional<double> value;  // the number the text shows, unrounded; none for text cells

  Cell(std::string t) : text(std::move(t)) {}  // NOLINT(google-explicit-constructor): rows are written as lists
  Cell(const char* t) : text(t) {}             // NOLINT(google-explicit-constructor)
  Cell(std::string t, double v) : text(std::move(t)), value(v) {}
};

// "%.*f" of v, as tables print numbers.
std::string fmt(double v, int precision = 4);
// A number cell: fmt(v, precision) shown, v kept.
Cell decimal(double v, int precision = 4);
// A whole-number cell.
Cell integer(long long v);

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void row(std::vector<Cell> cells) { rows_.push_back(std::move(cells)); }

  const std::vector<std::string>& header() const { return header_; }
  const std::vector<std::vector<Cell>>& rows() const { return rows_; }
  // Right-aligned columns two spaces apart under a rule of dashes, one line each.
  std::string text() const;
  std::string markdown() const;
  // {"columns": [...], "rows": [{column: value}]}: a number cell's exact value, else its text.
  nlohmann::json to_json() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<Cell>> rows_;
};

}  // namespace kvo
