// The SVG plots: every series, reference line and legend entry drawn; titles fit the picture and
// colour bars read in plain numbers.
#include "kvo/report/svg_plot.hpp"

#include <gtest/gtest.h>

#include <numbers>
#include <regex>

using namespace kvo;

namespace {
double svg_width(const std::string& svg) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(svg, m, std::regex("<svg[^>]* width=\"([0-9.]+)\"")));
  return std::stod(m[1].str());
}
}  // namespace

TEST(SvgPlot, HeatMapTitleFitsAndLogLabelsArePlainNumbers) {
  HeatMap hm;
  hm.title = "gamma^proof (UDC2 in the lemma's direction), A[id], max over steps (log10)";
  hm.value = {{0.0049, 0.01}, {0.2, 0.05}};  // 2 x 2: far narrower than the title
  hm.log_scale = true;
  const std::string svg = hm.svg();
  EXPECT_GE(svg_width(svg), 0.6 * 14 * static_cast<double>(hm.title.size()) + 16);
  EXPECT_EQ(svg.find(">1e"), std::string::npos) << "colour-bar labels must be plain numbers";
  EXPECT_NE(svg.find(">0.2</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0.0049</text>"), std::string::npos);
  EXPECT_NE(svg.find(">log scale</text>"), std::string::npos);
}

TEST(SvgPlot, LinePlotTitleIsSqueezedIntoTheWidth) {
  LinePlot p;
  p.title = std::string(200, 'x');
  p.series.push_back({"s", {0, 1}, {0, 1}});
  const std::string svg = p.svg(400, 300);
  EXPECT_NE(svg.find("textLength=\"332\""), std::string::npos);  // 400 - left 60 - 8
  LinePlot shortp = p;
  shortp.title = "short";
  EXPECT_EQ(shortp.svg(400, 300).find("textLength"), std::string::npos);
}

TEST(SvgPlot, DrawsEverySeriesReferenceLineAndLegend) {
  LinePlot p;
  p.title = "a < b";
  p.series.push_back({"one", {0, 1, 2}, {0.5, 0.7, 2.0}, false});
  p.series.push_back({"two", {0, 2}, {0.1, 0.2}, true});
  p.lines.push_back({"1 - 1/e", 1.0 - 1.0 / std::numbers::e});
  const std::string svg = p.svg();
  size_t polylines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++polylines;
  EXPECT_EQ(polylines, 2u);
  EXPECT_NE(svg.find("a &lt; b"), std::string::npos);  // escaped title
  EXPECT_NE(svg.find(">two<"), std::string::npos);
  EXPECT_NE(svg.find("1 - 1/e"), std::string::npos);
  EXPECT_EQ(svg.rfind("</svg>"), svg.size() - 7);
}
