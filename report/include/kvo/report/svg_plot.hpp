// A small SVG line-plot writer for reports: several named series over a shared x axis, dashed
// horizontal reference lines, axes with ticks, and a legend. No dependencies.
#pragma once
#include <string>
#include <vector>

namespace kvo {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;
  bool dashed = false;
  int colour = -1;  // palette index; -1: the series' own index
};

struct PlotLine {  // horizontal reference line
  std::string label;
  double y = 0.0;
};

struct LinePlot {
  std::string title, x_label, y_label;
  double y_min = 0.0, y_max = 1.0;  // fixed y range (values are clipped)
  std::vector<PlotSeries> series;
  std::vector<PlotLine> lines;

  // Appends (x, y) to the series called `name`, creating it (last, with `dashed`) when absent.
  void add_point(const std::string& name, double x, double y, bool dashed = false);
  std::string svg(int width = 860, int height = 460) const;
};

}  // namespace kvo

namespace kvo {

// A heat map of a rows x columns grid (NaN cells drawn grey) with a colour bar.
struct HeatMap {
  std::string title, row_label, col_label;
  std::vector<std::vector<double>> value;  // [row][col]
  bool log_scale = false;                  // colour by log10 of positive values

  std::string svg(int cell = 22) const;
};

}  // namespace kvo
