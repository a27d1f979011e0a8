// A result rendered for people: lines and tables in the order they are read, and SVG plots by file
// name. Every command's result renders through one: the CLI prints text() and writes the plots
// where asked, Python returns it (kvoracle.Report), and docs quote its Markdown.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvo/report/table.hpp"

namespace kvo {

struct ReportPlot {
  std::string name;  // a file name: "allocation.svg", "accuracy-passkey-256.svg"
  std::string svg;
};

class Report {
 public:
  // A line of text, printed as is (no trailing newline needed).
  void line(std::string text);
  // A table after what is there; fill it through the reference (valid until the next table).
  Table& table(std::vector<std::string> header);
  void plot(std::string name, std::string svg);
  // Another report's lines, tables and plots after this one's.
  void append(const Report& other);

  const std::vector<Table>& tables() const { return tables_; }
  const std::vector<ReportPlot>& plots() const { return plots_; }
  // The lines and tables as a terminal shows them.
  std::string text() const;
  // The same with each table in Markdown and each line a paragraph.
  std::string markdown() const;
  // {"text": text(), "tables": [Table::to_json()], "plots": [names]}.
  nlohmann::json to_json() const;

 private:
  struct Block {
    std::string line;
    int table = -1;  // index into tables_, or -1 for a line
  };
  std::vector<Block> blocks_;
  std::vector<Table> tables_;
  std::vector<ReportPlot> plots_;
};

}  // namespace kvo
