#include "svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace pk::tool {
namespace {

// Layout in SVG user units (pixels). bench/plot.py uses the same numbers: keep them in step.
constexpr double margin_left = 80;     // room for the y tick labels and the rotated unit
constexpr double margin_right = 24;
constexpr double margin_top = 64;      // title, then the legend
constexpr double margin_bottom = 120;  // x labels rotated by 35 degrees
constexpr double bar_width = 14;
constexpr double group_gap = 18;
constexpr double plot_height = 300;
constexpr double min_plot_width = 480;
constexpr int target_ticks = 5;
// Colour-blind-safe palette (Okabe-Ito), one per series in order; the roofline is vermillion.
constexpr const char* palette[] = {"#0072B2", "#56B4E9", "#009E73", "#E69F00", "#CC79A7", "#F0E442", "#000000"};
constexpr const char* roofline_colour = "#D55E00";

std::string esc(const std::string& s) {
  std::string o;
  for (const char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

//! Tick label: ticks are round (nice_step), so 6 significant digits print them whole ("1000", "0.0002").
std::string tick_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}
//! A bar's value in its tooltip: 4 significant digits.
std::string value_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

//! A round tick step (1, 2 or 5 times a power of ten) giving about `target_ticks` ticks up to `top`.
double nice_step(double top) {
  const double raw = top / target_ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

}  // namespace

std::string svg_bar_plot(const std::string& title, const std::string& unit, double roofline,
                         const std::string& roofline_label, const std::vector<plot_row>& rows) {
  std::vector<std::string> series;
  double top = roofline > 0 ? roofline : 0;
  for (const auto& r : rows)
    for (const auto& [name, v] : r.values) {
      if (std::find(series.begin(), series.end(), name) == series.end()) series.push_back(name);
      if (std::isfinite(v)) top = std::max(top, v);
    }
  if (top <= 0) top = 1;
  const double step = nice_step(top * 1.05);
  const double ymax = std::ceil(top * 1.05 / step) * step;
  const double group_width = static_cast<double>(std::max<std::size_t>(series.size(), 1)) * bar_width + group_gap;
  const double plot_width = std::max(min_plot_width, group_width * static_cast<double>(rows.size()));
  const double width = margin_left + plot_width + margin_right;
  const double height = margin_top + plot_height + margin_bottom;
  const double x0 = margin_left, y0 = margin_top + plot_height;  // origin of the axes
  const auto ypos = [&](double v) { return y0 - v / ymax * plot_height; };

  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width) << "\" height=\"" << num(height)
    << "\" viewBox=\"0 0 " << num(width) << " " << num(height) << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << num(width / 2) << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">"
    << esc(title) << "</text>\n";
  // Legend: one swatch per series, then the roofline's dashed line.
  double lx = x0;
  const double ly = 40;
  for (std::size_t i = 0; i < series.size(); ++i) {
    o << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly - 9) << "\" width=\"10\" height=\"10\" fill=\""
      << palette[i % std::size(palette)] << "\"/>"
      << "<text x=\"" << num(lx + 14) << "\" y=\"" << num(ly) << "\">" << esc(series[i]) << "</text>\n";
    lx += 14 + 7.0 * static_cast<double>(series[i].size()) + 16;  // about 7 units per character at size 11
  }
  if (roofline > 0)
    o << "<line x1=\"" << num(lx) << "\" y1=\"" << num(ly - 4) << "\" x2=\"" << num(lx + 20) << "\" y2=\"" << num(ly - 4)
      << "\" stroke=\"" << roofline_colour << "\" stroke-width=\"2\" stroke-dasharray=\"6,3\"/>"
      << "<text x=\"" << num(lx + 24) << "\" y=\"" << num(ly) << "\">" << esc(roofline_label) << "</text>\n";
  // Grid and y axis.
  for (double v = 0; v <= ymax * (1 + 1e-9); v += step) {
    const double y = ypos(v);
    o << "<line x1=\"" << num(x0) << "\" y1=\"" << num(y) << "\" x2=\"" << num(x0 + plot_width) << "\" y2=\"" << num(y)
      << "\" stroke=\"#dddddd\"/>"
      << "<text x=\"" << num(x0 - 6) << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">" << tick_text(v) << "</text>\n";
  }
  o << "<line x1=\"" << num(x0) << "\" y1=\"" << num(margin_top) << "\" x2=\"" << num(x0) << "\" y2=\"" << num(y0)
    << "\" stroke=\"black\"/>\n"
    << "<line x1=\"" << num(x0) << "\" y1=\"" << num(y0) << "\" x2=\"" << num(x0 + plot_width) << "\" y2=\"" << num(y0)
    << "\" stroke=\"black\"/>\n"
    << "<text x=\"16\" y=\"" << num(margin_top + plot_height / 2) << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
    << num(margin_top + plot_height / 2) << ")\">" << esc(unit) << "</text>\n";
  // Bars, one group per row, and the row labels.
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double gx = x0 + group_width * static_cast<double>(r) + group_gap / 2;
    for (const auto& [name, v] : rows[r].values) {
      if (!std::isfinite(v) || v < 0) continue;
      const auto k = static_cast<std::size_t>(std::find(series.begin(), series.end(), name) - series.begin());
      const double bx = gx + bar_width * static_cast<double>(k);
      o << "<rect x=\"" << num(bx) << "\" y=\"" << num(ypos(v)) << "\" width=\"" << num(bar_width - 2) << "\" height=\""
        << num(y0 - ypos(v)) << "\" fill=\"" << palette[k % std::size(palette)] << "\"><title>" << esc(rows[r].label)
        << ", " << esc(name) << ": " << value_text(v) << " " << esc(unit) << "</title></rect>\n";
    }
    const double cx = gx + (group_width - group_gap) / 2;
    o << "<text x=\"" << num(cx) << "\" y=\"" << num(y0 + 14) << "\" text-anchor=\"end\" transform=\"rotate(-35 "
      << num(cx) << " " << num(y0 + 14) << ")\">" << esc(rows[r].label) << "</text>\n";
  }
  if (roofline > 0)
    o << "<line x1=\"" << num(x0) << "\" y1=\"" << num(ypos(roofline)) << "\" x2=\"" << num(x0 + plot_width) << "\" y2=\""
      << num(ypos(roofline)) << "\" stroke=\"" << roofline_colour << "\" stroke-width=\"2\" stroke-dasharray=\"6,3\"/>\n";
  o << "</svg>\n";
  return o.str();
}

}  // namespace pk::tool
