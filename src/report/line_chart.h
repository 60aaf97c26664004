#pragma once
// A line chart as inline SVG: one series over training steps, with both axes, round
// ticks (1, 2 or 5 times a power of ten), tick labels, the axis names and a title.
#include <string>
#include <vector>

#include "report/metrics_series.h"

namespace hetrec::report {

struct ChartSpec {
  std::string title;
  std::string y_label;  // what the values are, written above the y axis
  std::string colour;   // the line's
  std::vector<Point> points;
  bool markers = false;  // a dot at each point (sparse series: evaluations)
};

std::string line_chart_svg(const ChartSpec& spec);

// Round ticks covering [lo, hi]: at least two, at most about `target` + 1.
std::vector<double> nice_ticks(double lo, double hi, int target);

// A tick label: k/M suffixes from ten thousand up, otherwise as many decimals as the
// tick spacing `step` needs.
std::string tick_label(double value, double step);

}  // namespace hetrec::report
