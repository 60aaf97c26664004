#include "plan/breakdown_svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <fmt/format.h>

namespace hetrec::inline plan {
namespace {

// Layout in SVG user units (pixels).
constexpr double kMinWidth = 960.0;
constexpr double kMargin = 16.0;
constexpr double kStatsColumn = 250.0;  // right of the bars: samples/s, step time, memory
constexpr double kTitleHeight = 44.0;
constexpr double kLabelHeight = 18.0;   // the accelerator and recipe line above each bar
constexpr double kBarHeight = 28.0;
constexpr double kBarGap = 14.0;
constexpr double kAxisHeight = 40.0;
constexpr double kLegendRow = 20.0;
constexpr double kFont = 12.0, kTitleFont = 16.0;
constexpr int kAxisTicks = 5;

// Colours given to the phases shown, in order: Paul Tol's "muted" scheme (9 colours),
// then the Okabe-Ito colours, both made to stay distinguishable with the common
// colour-vision deficiencies (P. Tol, "Colour Schemes", SRON/EPS/TN/09-002,
// https://personal.sron.nl/~pault/; M. Okabe and K. Ito, "Color Universal Design",
// https://jfly.uni-koeln.de/color/). Segments are also separated by a white line.
constexpr const char* kPalette[] = {"#332288", "#88ccee", "#44aa99", "#117733", "#999933", "#ddcc77", "#cc6677",
                                    "#882255", "#aa4499", "#e69f00", "#56b4e9", "#0072b2", "#d55e00", "#f0e442",
                                    "#000000"};
static_assert(std::size(kPalette) >= kStepPhaseCount, "one colour per phase");

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

// The axis: a round tick spacing (1, 2, 2.5 or 5 times a power of ten) giving at most
// kAxisTicks intervals up to an end at or above `ms`.
struct Axis {
  double end = 1.0;
  int ticks = 1;
};

Axis axis_for(double ms) {
  if (!(ms > 0.0)) return {};
  const double raw = ms / kAxisTicks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10.0 * p;
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  const int ticks = std::max(1, static_cast<int>(std::ceil(ms / step - 1e-9)));
  return {step * ticks, ticks};
}

std::string rate_text(double samples_per_s) {
  if (samples_per_s >= 1e6) return fmt::format("{:.2f} M samples/s", samples_per_s / 1e6);
  if (samples_per_s >= 1e3) return fmt::format("{:.1f} k samples/s", samples_per_s / 1e3);
  return fmt::format("{:.0f} samples/s", samples_per_s);
}

std::string gib(double bytes) { return fmt::format("{:.1f}", bytes / (1024.0 * 1024.0 * 1024.0)); }

std::string title_of(const std::string& subject, const std::vector<ChartBar>& bars) {
  if (bars.empty()) return "Predicted step of " + subject + ": no recipe fits";
  if (bars.size() == 1) return "Predicted step of " + subject + " on " + bars[0].accelerator;
  const auto fastest = std::max_element(bars.begin(), bars.end(), [](const ChartBar& a, const ChartBar& b) {
    return a.step.samples_per_s < b.step.samples_per_s;
  });
  return fmt::format("Predicted step of {} on {} accelerators; throughput relative to the fastest, {}", subject,
                     bars.size(), fastest->accelerator);
}

}  // namespace

double text_width_bound(const std::string& text, double font_px) {
  std::size_t glyphs = 0;
  for (unsigned char c : text) glyphs += (c & 0xc0) != 0x80;  // UTF-8 continuation bytes are not glyphs
  return 0.62 * font_px * static_cast<double>(glyphs);
}

std::string breakdown_svg(const std::string& subject, const std::vector<ChartBar>& bars) {
  const std::string title = title_of(subject, bars);
  double longest = 0.0, fastest = 0.0;
  std::array<bool, kStepPhaseCount> shown{};
  for (const ChartBar& b : bars) {
    // The axis covers the longest bar drawn: the phases stacked (more than the step when
    // some of them overlap in time), or the step.
    double stacked = 0.0;
    for (double ms : b.step.phase_ms) stacked += ms > 0.0 ? ms : 0.0;
    longest = std::max({longest, b.step.step_ms, stacked});
    fastest = std::max(fastest, b.step.samples_per_s);
    for (std::size_t i = 0; i < kStepPhaseCount; ++i) shown[i] = shown[i] || b.step.phase_ms[i] > 0.0;
  }
  // Colours in the order the phases appear.
  std::array<const char*, kStepPhaseCount> colour{};
  std::size_t used = 0;
  for (std::size_t i = 0; i < kStepPhaseCount; ++i)
    if (shown[i]) colour[i] = kPalette[used++];

  double width = std::max(kMinWidth, text_width_bound(title, kTitleFont) + 2 * kMargin);
  for (const ChartBar& b : bars)
    width = std::max(width, text_width_bound(b.accelerator + " (" + b.recipe + ")", kFont) + 2 * kMargin);
  // Legend: items flow left to right, wrapping at the chart's width.
  struct Item {
    std::size_t phase;
    double x, y;
  };
  std::vector<Item> legend;
  double lx = kMargin, ly = 0.0;
  for (std::size_t i = 0; i < kStepPhaseCount; ++i) {
    if (!shown[i]) continue;
    const double w = 18.0 + text_width_bound(std::string(step_phase_name(kAllStepPhases[i])), kFont) + 20.0;
    if (lx > kMargin && lx + w > width - kMargin) {
      lx = kMargin;
      ly += kLegendRow;
    }
    legend.push_back({i, lx, ly});
    lx += w;
  }
  const double legend_height = legend.empty() ? 0.0 : ly + kLegendRow;
  const Axis axis = axis_for(longest);
  const double end = axis.end;
  const double plot = width - 2 * kMargin - kStatsColumn;
  const double row = kLabelHeight + kBarHeight + kBarGap;
  const double height = kTitleHeight + static_cast<double>(bars.size()) * row + kAxisHeight + legend_height + kBarGap;

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\" font-size=\"{2:.0f}\">\n",
      width, height, kFont);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n", width, height);
  s += fmt::format("<text x=\"{:.0f}\" y=\"26\" font-size=\"{:.0f}\" font-weight=\"bold\">{}</text>\n", kMargin,
                   kTitleFont, escape(title));
  double y = kTitleHeight;
  for (const ChartBar& b : bars) {
    const StepPrediction& p = b.step;
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\"><tspan font-weight=\"bold\">{}</tspan> ({})</text>\n", kMargin,
                     y + 13, escape(b.accelerator), escape(b.recipe));
    y += kLabelHeight;
    double x = kMargin;
    for (std::size_t i = 0; i < kStepPhaseCount; ++i) {
      const double ms = p.phase_ms[i];
      if (!(ms > 0.0)) continue;
      const double w = plot * ms / end;
      s += fmt::format("<rect class=\"bar\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.0f}\" fill=\"{}\" "
                       "stroke=\"#ffffff\" stroke-width=\"0.75\"><title>{}: {:.3f} ms</title></rect>\n",
                       x, y, w, kBarHeight, colour[i], step_phase_name(kAllStepPhases[i]), ms);
      x += w;
    }
    // The step itself: shorter than the stacked phases where some of them overlap in time.
    const double step_x = kMargin + plot * p.step_ms / end;
    s += fmt::format("<line x1=\"{0:.2f}\" y1=\"{1:.1f}\" x2=\"{0:.2f}\" y2=\"{2:.1f}\" stroke=\"#000000\" "
                     "stroke-width=\"2\"/>\n",
                     step_x, y - 3, y + kBarHeight + 3);
    const double sx = kMargin + plot + 10;
    const std::string relative =
        bars.size() > 1 && fastest > 0 ? fmt::format(" ({:.2f}x)", p.samples_per_s / fastest) : std::string();
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-weight=\"bold\">{}{}</text>\n", sx, y + 11,
                     rate_text(p.samples_per_s), relative);
    const std::string memory = b.usable_device_bytes > 0
                                   ? "peak " + gib(b.peak_device_bytes) + " of " + gib(b.usable_device_bytes) + " GiB"
                                   : "peak " + gib(b.peak_device_bytes) + " GiB";
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{:.2f} ms/step, {}</text>\n", sx, y + 25, p.step_ms, memory);
    y += kBarHeight + kBarGap;
  }
  // Axis with ticks in milliseconds.
  s += fmt::format("<line x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\" stroke=\"#000000\"/>\n", kMargin, y,
                   kMargin + plot, y);
  for (int t = 0; t <= axis.ticks; ++t) {
    const double x = kMargin + plot * t / axis.ticks;
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000000\"/>\n", x, y, x, y + 5);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{:g}</text>\n", x, y + 18,
                     t == 0 ? "start" : t == axis.ticks ? "end" : "middle", end * t / axis.ticks);
  }
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">predicted milliseconds of the slowest GPU: "
                   "phases stacked, the black mark is the step (shorter where phases overlap)</text>\n",
                   kMargin + plot / 2, y + 34);
  y += kAxisHeight;
  for (const Item& it : legend) {
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", it.x, y + it.y,
                     colour[it.phase]);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", it.x + 18, y + it.y + 10,
                     step_phase_name(kAllStepPhases[it.phase]));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace hetrec::plan::plan
