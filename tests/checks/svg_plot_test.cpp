// The SVG plots: titles fit the picture and colour bars read in plain numbers.
#include "kvo/checks/svg_plot.hpp"

#include <gtest/gtest.h>

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
