// pk command-line tool: a small self-contained SVG bar plot (no libraries): one group of bars per row
// (one bar per series), a horizontal roofline, axis labels, a legend and a title. bench/plot.py is its
// Python twin (same layout, same colours) for the Python benchmark drivers.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace pk::tool {

//! One group of bars: a label under the x axis and (series name, value) pairs; a series absent from a
//! row draws no bar there. Series appear in the legend in order of first appearance.
struct plot_row {
  std::string label;
  std::vector<std::pair<std::string, double>> values;
};

//! The SVG document: y axis in `unit` from 0, a dashed line at `roofline` (none when <= 0) labelled
//! `roofline_label`.
std::string svg_bar_plot(const std::string& title, const std::string& unit, double roofline,
                         const std::string& roofline_label, const std::vector<plot_row>& rows);

}  // namespace pk::tool
