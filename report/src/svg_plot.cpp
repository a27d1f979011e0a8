#include "kvo/report/svg_plot.hpp"

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

// A generous estimate of a sans-serif text's width in pixels (0.6 em per character).
double text_width(const std::string& s, double font_size) {
  double chars = 0;
  for (unsigned char ch : s) chars += (ch & 0xc0) != 0x80 ? 1 : 0;  // UTF-8 characters
  return 0.6 * font_size * chars;
}

// A title at (x, y) that never runs past max_width: squeezed with textLength when it would.
std::string title_text(double x, double y, double font_size, const std::string& title, double max_width) {
  std::ostringstream o;
  o << "<text x=\"" << x << "\" y=\"" << y << "\" font-size=\"" << font_size << "\"";
  if (text_width(title, font_size) > max_width)
    o << " textLength=\"" << max_width << "\" lengthAdjust=\"spacingAndGlyphs\"";
  o << ">" << esc(title) << "</text>\n";
  return o.str();
}

}  // namespace

void LinePlot::add_point(const std::string& name, double x, double y, bool dashed) {
  auto it = std::find_if(series.begin(), series.end(), [&](const PlotSeries& s) { return s.name == name; });
  if (it == series.end()) {
    series.push_back({name, {}, {}, dashed});
    it = series.end() - 1;
  }
  it->x.push_back(x);
  it->y.push_back(y);
}

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
    << title_text(left, 22, 15, title, width - left - 8);
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
    const char* colour = kPalette[static_cast<size_t>(ser.colour >= 0 ? ser.colour : static_cast<int>(s)) % 10];
    o << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\""
      << (ser.dashed ? " stroke-dasharray=\"3,3\"" : "") << " points=\"";
    for (size_t p = 0; p < ser.x.size() && p < ser.y.size(); ++p)
      if (std::isfinite(ser.y[p])) o << num(X(ser.x[p])) << ',' << num(Y(ser.y[p])) << ' ';
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

namespace {

// Viridis-like ramp from dark blue (0) to yellow (1).
std::string ramp(double t) {
  static const double stops[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  t = std::clamp(t, 0.0, 1.0) * 4.0;
  const int a = std::min(3, static_cast<int>(t));
  const double f = t - a;
  char b[16];
  std::snprintf(b, sizeof b, "#%02x%02x%02x", static_cast<int>(stops[a][0] + f * (stops[a + 1][0] - stops[a][0])),
                static_cast<int>(stops[a][1] + f * (stops[a + 1][1] - stops[a][1])),
                static_cast<int>(stops[a][2] + f * (stops[a + 1][2] - stops[a][2])));
  return b;
}

}  // namespace

std::string HeatMap::svg(int cell) const {
  const size_t rows = value.size(), cols = rows ? value.front().size() : 0;
  auto tr = [&](double v) { return log_scale ? (v > 0 ? std::log10(v) : NAN) : v; };
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& r : value)
    for (double v : r)
      if (std::isfinite(tr(v))) lo = std::min(lo, tr(v)), hi = std::max(hi, tr(v));
  if (!(hi > lo)) hi = lo + 1.0;
  if (!std::isfinite(lo)) lo = 0.0, hi = 1.0;
  const double left = 70, top = 40;
  const double width = std::max(left + static_cast<double>(cols) * cell + 120, 16 + text_width(title, 14)),
               height = top + static_cast<double>(rows) * cell + 50;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << title_text(8, 20, 14, title, width - 16);
  for (size_t r = 0; r < rows; ++r) {
    o << "<text x=\"" << left - 6 << "\" y=\"" << top + (static_cast<double>(r) + 0.7) * cell
      << "\" text-anchor=\"end\">" << r << "</text>\n";
    for (size_t c = 0; c < cols; ++c) {
      const double v = tr(value[r][c]);
      const std::string fill = std::isfinite(v) ? ramp((v - lo) / (hi - lo)) : std::string("#cccccc");
      o << "<rect x=\"" << left + static_cast<double>(c) * cell << "\" y=\"" << top + static_cast<double>(r) * cell
        << "\" width=\"" << cell << "\" height=\"" << cell << "\" fill=\"" << fill << "\"><title>" << r << "," << c
        << ": " << num(value[r][c]) << "</title></rect>\n";
    }
  }
  for (size_t c = 0; c < cols; ++c)
    o << "<text x=\"" << left + (static_cast<double>(c) + 0.5) * cell << "\" y=\""
      << top + static_cast<double>(rows) * cell + 14 << "\" text-anchor=\"middle\">" << c << "</text>\n";
  o << "<text x=\"" << left + static_cast<double>(cols) * cell / 2 << "\" y=\"" << height - 8
    << "\" text-anchor=\"middle\">" << esc(col_label) << "</text>\n"
    << "<text transform=\"translate(16," << top + static_cast<double>(rows) * cell / 2
    << ") rotate(-90)\" text-anchor=\"middle\">" << esc(row_label) << "</text>\n";
  const double bx = left + static_cast<double>(cols) * cell + 20, bh = static_cast<double>(rows) * cell;
  for (int t = 0; t < 50; ++t)
    o << "<rect x=\"" << bx << "\" y=\"" << top + bh * (1.0 - (t + 1) / 50.0) << "\" width=\"14\" height=\""
      << bh / 50.0 + 0.5 << "\" fill=\"" << ramp(t / 49.0) << "\"/>\n";
  // Colour-bar ends in plain numbers (a log scale's ends are powers of ten of lo and hi).
  auto plain = [&](double v) { return num(log_scale ? std::pow(10.0, v) : v); };
  o << "<text x=\"" << bx + 18 << "\" y=\"" << top + 10 << "\">" << plain(hi) << "</text>\n"
    << "<text x=\"" << bx + 18 << "\" y=\"" << top + bh << "\">" << plain(lo) << "</text>\n";
  if (log_scale) o << "<text x=\"" << bx + 18 << "\" y=\"" << top + bh / 2 << "\">log scale</text>\n";
  o << "</svg>\n";
  return o.str();
}

}  // namespace kvo
