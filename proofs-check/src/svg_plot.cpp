#include "kvo/checks/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace kvo {
namespace {

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

}  // namespace

std::string LinePlot::svg(int width, int height) const {
  const double left = 60, right = 190, top = 36, bottom = 48;
  const double pw = width - left - right, ph = height - top - bottom;
  double x_min = 0, x_max = 1;
  bool any = false;
  for (const auto& s : series)
    for (double v : s.x) {
      x_min = any ? std::min(x_min, v) : v;
      x_max = any ? std::max(x_max, v) : v;
      any = true;
    }
  if (x_max <= x_min) x_max = x_min + 1;
  auto X = [&](double v) { return left + (v - x_min) / (x_max - x_min) * pw; };
  auto Y = [&](double v) { return top + (1.0 - (std::clamp(v, y_min, y_max) - y_min) / (y_max - y_min)) * ph; };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << left << "\" y=\"22\" font-size=\"15\">" << esc(title) << "</text>\n";
  // Axes and ticks.
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  for (int t = 0; t <= 5; ++t) {
    const double yv = y_min + (y_max - y_min) * t / 5.0;
    double xv = x_min + (x_max - x_min) * t / 5.0;
    if (x_max - x_min >= 10) xv = std::round(xv);  // whole steps on long axes
    o << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << Y(yv) << "\" y2=\"" << Y(yv)
      << "\" stroke=\"#eee\"/>\n"
      << "<text x=\"" << left - 6 << "\" y=\"" << Y(yv) + 4 << "\" text-anchor=\"end\">" << num(yv) << "</text>\n"
      << "<text x=\"" << X(xv) << "\" y=\"" << top + ph + 16 << "\" text-anchor=\"middle\">" << num(xv) << "</text>\n";
  }
  o << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 10 << "\" text-anchor=\"middle\">" << esc(x_label)
    << "</text>\n"
    << "<text transform=\"translate(16," << top + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">" << esc(y_label)
    << "</text>\n";
  for (const auto& l : lines)
    o << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << Y(l.y) << "\" y2=\"" << Y(l.y)
      << "\" stroke=\"#000\" stroke-dasharray=\"6,4\"/>\n"
      << "<text x=\"" << left + pw - 4 << "\" y=\"" << Y(l.y) - 4 << "\" text-anchor=\"end\">" << esc(l.label)
      << "</text>\n";
  for (size_t s = 0; s < series.size(); ++s) {
    const auto& ser = series[s];
    const char* colour = kPalette[s % 10];
    o << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\""
      << (ser.dashed ? " stroke-dasharray=\"3,3\"" : "") << " points=\"";
    for (size_t p = 0; p < ser.x.size() && p < ser.y.size(); ++p)
      o << num(X(ser.x[p])) << ',' << num(Y(ser.y[p])) << ' ';
    o << "\"/>\n";
    const double ly = top + 14 + 18.0 * static_cast<double>(s);
    o << "<line x1=\"" << left + pw + 12 << "\" x2=\"" << left + pw + 36 << "\" y1=\"" << ly - 4 << "\" y2=\"" << ly - 4
      << "\" stroke=\"" << colour << "\" stroke-width=\"2\"" << (ser.dashed ? " stroke-dasharray=\"3,3\"" : "")
      << "/>\n"
      << "<text x=\"" << left + pw + 42 << "\" y=\"" << ly << "\">" << esc(ser.name) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace kvo
