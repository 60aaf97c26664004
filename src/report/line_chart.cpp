#include "report/line_chart.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "report/svg_text.h"

namespace hetrec::report {
namespace {

// Layout in SVG user units (CSS pixels).
constexpr double kWidth = 860.0;
constexpr double kHeight = 280.0;
constexpr double kLeft = 78.0;    // y tick labels
constexpr double kRight = 24.0;
constexpr double kTop = 54.0;     // title and y-axis name
constexpr double kBottom = 48.0;  // x tick labels and the x-axis name
constexpr int kTicks = 5;

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) {
    const double pad = lo != 0.0 ? std::fabs(lo) * 0.05 : 1.0;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(target, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10.0 * mag;
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  const double first = std::floor(lo / step) * step;
  const double last = std::ceil(hi / step) * step;
  std::vector<double> ticks;
  for (int i = 0; first + i * step <= last + step * 1e-9; ++i) ticks.push_back(first + i * step);
  return ticks;
}

std::string tick_label(double value, double step) {
  const double a = std::fabs(value);
  if (a >= 1e4 && step >= 1e3) {
    const bool mega = a >= 1e6 && step >= 1e5;
    const double scaled = value / (mega ? 1e6 : 1e3);
    const double scaled_step = step / (mega ? 1e6 : 1e3);
    const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(scaled_step) + 1e-9)));
    return fmt::format("{:.{}f}{}", scaled, decimals, mega ? "M" : "k");
  }
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  if (std::fabs(value) < step * 1e-9) value = 0.0;  // no "-0"
  return fmt::format("{:.{}f}", value, decimals);
}

std::string line_chart_svg(const ChartSpec& spec) {
  double x_lo = 0.0, x_hi = 1.0, y_lo = 0.0, y_hi = 1.0;
  if (!spec.points.empty()) {
    x_lo = x_hi = spec.points.front().step;
    y_lo = y_hi = spec.points.front().value;
    for (const Point& p : spec.points) {
      x_lo = std::min(x_lo, p.step);
      x_hi = std::max(x_hi, p.step);
      y_lo = std::min(y_lo, p.value);
      y_hi = std::max(y_hi, p.value);
    }
  }
  x_lo = std::min(x_lo, 0.0);  // steps from the start of training
  const std::vector<double> xt = nice_ticks(x_lo, x_hi, kTicks);
  const std::vector<double> yt = nice_ticks(y_lo, y_hi, kTicks);
  const double px0 = kLeft, px1 = kWidth - kRight, py0 = kHeight - kBottom, py1 = kTop;
  auto sx = [&](double v) { return px0 + (px1 - px0) * (v - xt.front()) / (xt.back() - xt.front()); };
  auto sy = [&](double v) { return py0 - (py0 - py1) * (v - yt.front()) / (yt.back() - yt.front()); };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\">\n",
      kWidth, kHeight);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n", kWidth, kHeight);
  s += fmt::format("<text x=\"{:.0f}\" y=\"20\" font-size=\"15\" font-weight=\"bold\">{}</text>\n", kLeft,
                   escape_xml(spec.title));
  s += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"start\">{}</text>\n", 8.0, kTop - 12,
                   escape_xml(spec.y_label));
  // Grid and ticks.
  const double y_step = yt.size() > 1 ? yt[1] - yt[0] : 1.0;
  for (double v : yt) {
    const double y = sy(v);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e0e0e0\"/>\n", px0, y, px1, y);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000000\"/>\n", px0 - 5, y,
                     px0, y);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", px0 - 8, y + 4,
                     tick_label(v, y_step));
  }
  const double x_step = xt.size() > 1 ? xt[1] - xt[0] : 1.0;
  for (double v : xt) {
    const double x = sx(v);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000000\"/>\n", x, py0, x,
                     py0 + 5);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x, py0 + 19,
                     tick_label(v, x_step));
  }
  s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000000\"/>\n", px0, py0, px1,
                   py0);
  s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000000\"/>\n", px0, py0, px0,
                   py1);
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">training step</text>\n", (px0 + px1) / 2,
                   kHeight - 8);
  // The series.
  if (spec.points.size() > 1) {
    s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"", spec.colour);
    for (const Point& p : spec.points) s += fmt::format("{:.1f},{:.1f} ", sx(p.step), sy(p.value));
    s += "\"/>\n";
  }
  if (spec.markers || spec.points.size() == 1)
    for (const Point& p : spec.points)
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>step {:g}: {:g}</title></circle>\n",
                       sx(p.step), sy(p.value), spec.colour, p.step, p.value);
  if (spec.points.empty())
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">no records in this run</text>\n",
                     (px0 + px1) / 2, (py0 + py1) / 2);
  s += "</svg>\n";
  return s;
}

}  // namespace hetrec::report
