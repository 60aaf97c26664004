#include "plan/breakdown_svg.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace hetrec {
namespace {

// Layout in SVG user units (pixels).
constexpr double kWidth = 960.0;
constexpr double kLabelColumn = 200.0;  // left of the bars: the recipe labels
constexpr double kRightMargin = 120.0;  // right of the bars: the totals
constexpr double kTitleHeight = 40.0;
constexpr double kBarHeight = 26.0;
constexpr double kBarGap = 14.0;
constexpr double kAxisHeight = 34.0;
constexpr double kLegendRow = 20.0;
constexpr int kLegendColumns = 4;
constexpr int kAxisTicks = 5;

// One colour per phase (kAllStepPhases order): the ten "Tableau 10" colours and two greys,
// and three "Tableau 20" colours for the communication phases of several GPUs.
constexpr const char* kPhaseColours[kStepPhaseCount] = {
    "#4e79a7", "#f28e2b", "#e15759", "#d37295" /* embedding_exchange */, "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#499894" /* dense_all_reduce */, "#86bcb6" /* embedding_grad_exchange */, "#bab0ac",
    "#7f7f7f", "#c7c7c7"};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
    }
  }
  return out;
}

// A round axis end at or above `ms`: 1, 2 or 5 times a power of ten.
double axis_end(double ms) {
  if (!(ms > 0.0)) return 1.0;
  const double p = std::pow(10.0, std::floor(std::log10(ms)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= ms) return m * p;
  return 10.0 * p;
}

}  // namespace

std::string breakdown_svg(const std::string& title, const std::vector<std::pair<std::string, StepPrediction>>& bars) {
  double longest = 0.0;
  for (const auto& b : bars) longest = std::max(longest, b.second.step_ms);
  const double end = axis_end(longest);
  const double plot = kWidth - kLabelColumn - kRightMargin;
  const double bars_height = static_cast<double>(bars.size()) * (kBarHeight + kBarGap);
  const int legend_rows = static_cast<int>((kStepPhaseCount + kLegendColumns - 1) / kLegendColumns);
  const double height = kTitleHeight + bars_height + kAxisHeight + legend_rows * kLegendRow + kBarGap;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, height, kWidth, height);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n", kWidth, height);
  s += fmt::format("<text x=\"{:.0f}\" y=\"24\" font-size=\"16\">{}</text>\n", kLabelColumn, escape(title));
  double y = kTitleHeight;
  for (const auto& [label, p] : bars) {
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLabelColumn - 8,
                     y + kBarHeight * 0.65, escape(label));
    double x = kLabelColumn;
    for (std::size_t i = 0; i < kStepPhaseCount; ++i) {
      const double ms = p.phase_ms[i];
      if (!(ms > 0.0)) continue;
      const double w = plot * ms / end;
      s += fmt::format("<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.0f}\" fill=\"{}\">"
                       "<title>{}: {:.3f} ms</title></rect>\n",
                       x, y, w, kBarHeight, kPhaseColours[i], step_phase_name(kAllStepPhases[i]), ms);
      x += w;
    }
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{:.2f} ms</text>\n", x + 6, y + kBarHeight * 0.65, p.step_ms);
    y += kBarHeight + kBarGap;
  }
  // Axis with ticks in milliseconds.
  s += fmt::format("<line x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\" stroke=\"#000000\"/>\n", kLabelColumn, y,
                   kLabelColumn + plot, y);
  for (int t = 0; t <= kAxisTicks; ++t) {
    const double x = kLabelColumn + plot * t / kAxisTicks;
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000000\"/>\n", x, y, x, y + 5);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:g}</text>\n", x, y + 18,
                     end * t / kAxisTicks);
  }
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">ms per step</text>\n", kLabelColumn + plot + 8, y + 18);
  y += kAxisHeight;
  // Legend.
  const double column = (kWidth - kLabelColumn) / kLegendColumns;
  for (std::size_t i = 0; i < kStepPhaseCount; ++i) {
    const double lx = kLabelColumn + column * static_cast<double>(i % kLegendColumns);
    const double ly = y + kLegendRow * static_cast<double>(i / kLegendColumns);
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", lx, ly,
                     kPhaseColours[i]);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", lx + 18, ly + 10, step_phase_name(kAllStepPhases[i]));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace hetrec
