// The planner's outputs: the recipe TOML (read back with the TOML parser the trainer
// uses), the SVG chart (well-formed, one segment per non-zero phase), and the tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <string>
#include <toml++/toml.h>
#include <vector>

#include "plan/breakdown_svg.h"
#include "plan/port_comparison.h"
#include "plan/recipe_toml.h"
#include "plan/report.h"
#include "plan/search.h"
#include "plan_test_support.h"

namespace hetrec::test {
namespace {

// The [recipe] keys train/config.cpp (apply_recipe) accepts.
// (cross_residual: the 16-bit recipes of a DCNv2 model, as both of these are.)
const std::set<std::string> kTrainerRecipeKeys = {"batch_size",        "row_dtype", "dense_dtype",
                                                  "allow_tf32",        "hardware",  "predicted_step_ms",
                                                  "predicted_samples_per_s", "cross_residual"};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// A small XML well-formedness check: every tag closes in order, attribute values are
// quoted, text holds no raw '<' and only the five predefined entities. Returns the
// root element's name.
std::string check_xml(const std::string& s) {
  std::vector<std::string> stack;
  std::string root;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '<') {
      const std::size_t end = s.find('>', i);
      EXPECT_NE(end, std::string::npos) << "unterminated tag at " << i;
      if (end == std::string::npos) return "";
      std::string tag = s.substr(i + 1, end - i - 1);
      const bool closing = !tag.empty() && tag[0] == '/';
      const bool self = !tag.empty() && tag.back() == '/';
      if (closing) tag = tag.substr(1);
      if (self) tag.pop_back();
      const std::string name = tag.substr(0, tag.find_first_of(" \t\n"));
      EXPECT_FALSE(name.empty()) << "empty tag at " << i;
      // Attributes: name="value" pairs.
      std::size_t q = name.size();
      while (!closing && q < tag.size()) {
        while (q < tag.size() && (tag[q] == ' ' || tag[q] == '\n')) ++q;
        if (q >= tag.size()) break;
        const std::size_t eq = tag.find('=', q);
        EXPECT_NE(eq, std::string::npos) << "attribute without value in <" << tag << ">";
        if (eq == std::string::npos) break;
        EXPECT_EQ(tag[eq + 1], '"') << "unquoted attribute in <" << tag << ">";
        const std::size_t close = tag.find('"', eq + 2);
        EXPECT_NE(close, std::string::npos);
        if (close == std::string::npos) break;
        EXPECT_EQ(tag.substr(eq + 2, close - eq - 2).find('<'), std::string::npos);
        q = close + 1;
      }
      if (closing) {
        EXPECT_FALSE(stack.empty()) << "</" << name << "> closes nothing";
        if (stack.empty()) return "";
        EXPECT_EQ(stack.back(), name);
        stack.pop_back();
      } else if (!self) {
        if (root.empty()) root = name;
        else EXPECT_FALSE(stack.empty()) << "second root element <" << name << ">";
        stack.push_back(name);
      }
      i = end + 1;
    } else {
      if (s[i] == '&') {
        bool ok = false;
        for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) ok = ok || s.compare(i, std::strlen(e), e) == 0;
        EXPECT_TRUE(ok) << "bare '&' at " << i;
      }
      ++i;
    }
  }
  EXPECT_TRUE(stack.empty()) << "unclosed <" << (stack.empty() ? "" : stack.back()) << ">";
  return root;
}

RecipeEvaluation chosen(const std::string& hw, PlanConstraints c = {}) {
  const Workload w{mlperf_model(), mlperf_optim(), IdDistribution{}};
  return plan_recipes(w, shipped_target(hw), c).best();
}

TEST(Report, RecipeTomlHasOnlyTheTrainersKeysAndReadsBack) {
  const ModelConfig m = mlperf_model();
  for (const char* hw : {"h100_sxm", "h200_sxm"}) {
    const RecipeEvaluation e = chosen(hw);
    const std::string text = recipe_to_toml(e.recipe, e.step, m);
    toml::table t;
    ASSERT_NO_THROW(t = toml::parse(text)) << text;
    ASSERT_TRUE(t["recipe"].is_table()) << text;
    EXPECT_EQ(t.size(), 1u);
    std::set<std::string> keys;
    for (const auto& [k, v] : *t["recipe"].as_table()) keys.insert(std::string(k.str()));
    EXPECT_EQ(keys, kTrainerRecipeKeys) << text;
    EXPECT_EQ(t["recipe"]["batch_size"].value<int64_t>(), e.recipe.batch);
    EXPECT_EQ(t["recipe"]["hardware"].value<std::string>(), std::string(hw));
    EXPECT_EQ(t["recipe"]["row_dtype"].value<std::string>(), std::string(dtype_name(e.recipe.row_dtype)));
    const char* dense_dtype = e.recipe.dense == DensePrecision::bf16   ? "bf16"
                              : e.recipe.dense == DensePrecision::fp16 ? "fp16"
                                                                       : "fp32";  // fp32 and tf32 GEMMs
    EXPECT_EQ(t["recipe"]["dense_dtype"].value<std::string>(), dense_dtype);
    EXPECT_EQ(t["recipe"]["allow_tf32"].value<bool>(), e.recipe.dense == DensePrecision::tf32);
    EXPECT_NEAR(*t["recipe"]["predicted_step_ms"].value<double>(), e.step.step_ms, 1e-3);
    EXPECT_NEAR(*t["recipe"]["predicted_samples_per_s"].value<double>(), e.step.samples_per_s, 0.1);
  }
}

TEST(Report, RecipeTomlListsHostTablesAndEscapesNames) {
  ModelConfig m = mlperf_model();
  m.tables[0].name = "clicks \"raw\"\\x";
  Recipe r = recipe_of_model(m, 4096, "h100_sxm");
  r.dense = DensePrecision::bf16;
  r.row_dtype = DType::bf16;
  r.placement[0] = r.placement[9] = TablePlacement::host;
  StepPrediction p;
  p.step_ms = 12.5;
  p.samples_per_s = 4096 / 12.5e-3;
  const std::string text = recipe_to_toml(r, p, m);
  const toml::table t = toml::parse(text);
  EXPECT_EQ(t["recipe"]["dense_dtype"].value<std::string>(), "bf16");
  EXPECT_EQ(t["recipe"]["allow_tf32"].value<bool>(), false);
  const toml::array* host = t["recipe"]["host_tables"].as_array();
  ASSERT_NE(host, nullptr) << text;
  ASSERT_EQ(host->size(), 2u);
  EXPECT_EQ((*host)[0].value<std::string>(), m.tables[0].name);
  EXPECT_EQ((*host)[1].value<std::string>(), "t9");
}

TEST(Report, SvgIsWellFormedWithOneSegmentPerPhaseAndALegendOfThePhasesShown) {
  std::vector<ChartBar> bars;
  int segments = 0;
  std::array<bool, kStepPhaseCount> shown{};
  for (const char* hw : {"h100_sxm", "h200_sxm"}) {
    const RecipeEvaluation e = chosen(hw);
    bars.push_back({std::string("NVIDIA ") + hw + " <fp16 & more>", "batch 65536", e.step, 60e9, 140e9});
    for (std::size_t i = 0; i < kStepPhaseCount; ++i) {
      segments += e.step.phase_ms[i] > 0.0;
      shown[i] = shown[i] || e.step.phase_ms[i] > 0.0;
    }
  }
  const std::size_t shown_count = static_cast<std::size_t>(std::count(shown.begin(), shown.end(), true));
  ASSERT_LT(shown_count, kStepPhaseCount);  // one GPU: no communication phases
  const std::string svg = breakdown_svg("DLRM-DCNv2 \"MLPerf\"", bars);
  EXPECT_EQ(check_xml(svg), "svg");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  // Background, one rectangle per non-zero phase of each bar, one legend swatch per phase shown.
  EXPECT_EQ(count(svg, "<rect "), 1 + static_cast<std::size_t>(segments) + shown_count);
  EXPECT_EQ(count(svg, "<title>"), static_cast<std::size_t>(segments));
  EXPECT_NE(svg.find("NVIDIA h100_sxm &lt;fp16 &amp; more&gt;"), std::string::npos);
  EXPECT_NE(svg.find("&quot;MLPerf&quot; on 2 accelerators; throughput relative to the fastest, NVIDIA h200_sxm"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("M samples/s (1.00x)"), std::string::npos) << svg;
  EXPECT_NE(svg.find("peak 55.9 of 130.4 GiB"), std::string::npos) << svg;
  for (std::size_t i = 0; i < kStepPhaseCount; ++i)
    EXPECT_EQ(svg.find(">" + std::string(step_phase_name(kAllStepPhases[i])) + "</text>") != std::string::npos, shown[i])
        << step_phase_name(kAllStepPhases[i]);
}

TEST(Report, TablesNameEveryHardwareAndExplainRefusals) {
  const Workload w{mlperf_model(), mlperf_optim(), IdDistribution{}};
  PlanConstraints c;
  c.rows = {DType::f32};  // the H100 cannot hold fp32 rows
  const PlanTarget h100 = shipped_target("h100_sxm"), h200 = shipped_target("h200_sxm");
  const std::vector<PlanResult> plans = {plan_recipes(w, h100, c), plan_recipes(w, h200, c)};
  const std::string table = format_plan_table(w, plans, {&h100, &h200});
  EXPECT_NE(table.find("h100_sxm"), std::string::npos);
  EXPECT_NE(table.find("h200_sxm"), std::string::npos);
  EXPECT_NE(table.find("does not fit"), std::string::npos);
  EXPECT_NE(table.find("no recipe fits"), std::string::npos);
  // One GPU: every phase but the communication phases of several GPUs.
  for (StepPhase p : kAllStepPhases)
    EXPECT_EQ(table.find(std::string(step_phase_name(p))) != std::string::npos, !communication_phase(p))
        << step_phase_name(p);

  const std::string phases = format_phase_table(plans[1].best());
  EXPECT_NE(phases.find("interaction_bwd"), std::string::npos);
  EXPECT_NE(phases.find("samples/s"), std::string::npos);
  EXPECT_EQ(count(format_candidates(w, plans[1], 3), "\n"), 4u);  // header + 3

  const PortComparison down = compare_direct_port(w, plans[1], plans[0], h100, c);
  PlanConstraints open;
  const PlanResult h100_open = plan_recipes(w, h100, open);
  const PortComparison up = compare_direct_port(w, h100_open, plans[1], h200, open);
  const std::string ports = format_port_comparisons(w, {up, down});
  EXPECT_NE(ports.find("h100_sxm recipe on h200_sxm"), std::string::npos) << ports;
  EXPECT_NE(ports.find("direct port / planned samples/s"), std::string::npos) << ports;
  EXPECT_FALSE(down.ported.fits);
  EXPECT_FALSE(down.native.has_value());
  EXPECT_NE(ports.find("h200_sxm recipe on h100_sxm"), std::string::npos) << ports;
  EXPECT_NE(ports.find("does not fit: needs"), std::string::npos) << ports;
  EXPECT_NE(ports.find("h100_sxm has no recipe of its own"), std::string::npos) << ports;
  EXPECT_EQ(format_rate(1.36e6), "1.36 M");
  EXPECT_EQ(format_rate(845e3), "845 k");
}

}  // namespace
}  // namespace hetrec::test
