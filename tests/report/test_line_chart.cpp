// The report's charts: round ticks that cover the data, tick labels as precise as their
// spacing, and a chart with both axes, the title and one polyline of the points.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "report/line_chart.h"

using namespace hetrec::report;

TEST(LineChart, TicksAreRoundAndCoverTheData) {
  for (const auto& [lo, hi] : std::vector<std::pair<double, double>>{
           {0.0, 977.0}, {0.4321, 0.6789}, {51234.0, 118000.0}, {0.75, 0.75}, {-3.0, 2.0}}) {
    const std::vector<double> t = nice_ticks(lo, hi, 5);
    ASSERT_GE(t.size(), 2u) << lo << " " << hi;
    EXPECT_LE(t.front(), lo);
    EXPECT_GE(t.back(), hi);
    EXPECT_LE(t.size(), 7u);
    const double step = t[1] - t[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
    EXPECT_TRUE(std::fabs(mantissa - 1) < 1e-9 || std::fabs(mantissa - 2) < 1e-9 || std::fabs(mantissa - 5) < 1e-9)
        << step;
  }
}

TEST(LineChart, TickLabelsAreAsPreciseAsTheirSpacing) {
  EXPECT_EQ(tick_label(0.55, 0.05), "0.55");
  EXPECT_EQ(tick_label(0.7, 0.01), "0.70");
  EXPECT_EQ(tick_label(400.0, 200.0), "400");
  EXPECT_EQ(tick_label(120000.0, 20000.0), "120k");
  EXPECT_EQ(tick_label(2500000.0, 500000.0), "2.5M");
  EXPECT_EQ(tick_label(-1e-17, 0.1), "0.0");  // no "-0.0"
}

TEST(LineChart, DrawsAxesTitleAndOneLineOfThePoints) {
  const std::string svg = line_chart_svg({"Loss <train>", "loss", "#0072b2", {{10, 0.6}, {20, 0.55}, {30, 0.52}}, false});
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find(">Loss &lt;train&gt;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">training step</text>"), std::string::npos);
  EXPECT_NE(svg.find("<polyline "), std::string::npos);
  EXPECT_EQ(svg.find("<circle "), std::string::npos);
  const std::string one = line_chart_svg({"AUC", "AUC", "#d55e00", {{5, 0.7}}, true});
  EXPECT_NE(one.find("<circle "), std::string::npos);  // a single point is still drawn
  EXPECT_EQ(one.find("<polyline "), std::string::npos);
  const std::string none = line_chart_svg({"AUC", "AUC", "#d55e00", {}, true});
  EXPECT_NE(none.find("no records in this run"), std::string::npos);
}
