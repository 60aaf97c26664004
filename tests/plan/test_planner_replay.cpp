// The recorded planner benchmarks (bench/results/planner-*.json) replayed with today's
// step model, calibrated on their measured recipes as `hetrec plan` calibrates: among the
// measured recipes of each config, the one the model ranks first (samples/s, the search's
// objective) is compared with the fastest measured. The figure may not fall below the one
// recorded here when the objective became samples/s (below), nor below the 3% target
// (docs/planner.md) for records without one. A model change that ranks a slower recipe
// first fails here. Each recipe's step error against its recorded figure is replayed here
// for the full MLPerf grid of 2026-12-06, and by test_calibration.cpp for the earlier record.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "plan/calibration.h"
#include "plan/planner_record.h"
#include "plan/planner_replay.h"
#include "plan_test_support.h"

namespace hetrec::test {
namespace {

const IdDistribution kZipf{IdLaw::zipf, 1.05};  // the configs' data.synthetic.zipf_exponent

std::vector<std::string> planner_records() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(kResultsDir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("planner-", 0) == 0 && e.path().extension() == ".json") out.push_back(e.path().string());
  }
  return out;
}

std::vector<MeasuredRecipe> measured(const PlannerRecord& record, const PlanTarget& t) {
  std::vector<MeasuredRecipe> out;
  for (const PlannerRun& run : record.runs)
    out.push_back(MeasuredRecipe{run.label, run.config, run.batch,
                                 planner_measurement(run, planner_config_model(run.config), mlperf_optim(), kZipf, t.gemm)});
  return out;
}

// The step model calibrated on every planner record's measured recipes.
StepModelParams fit_on_planner_records(const PlanTarget& t) {
  std::vector<StepMeasurement> ms;
  for (const std::string& f : planner_records())
    for (const MeasuredRecipe& m : measured(read_planner_record(f), t)) ms.push_back(m.measurement);
  return calibrate_step_model(ms, t.step).params;
}

// Chosen vs best of each record and config, recorded with the samples/s objective (the
// records' own "chosen_vs_best" was computed under the former rule, batch <= 65536 and a
// 10% gain per precision step, so it is not this objective's figure).
struct RecordedChosenVsBest {
  const char* file;
  const char* config;
  double ratio;
};
constexpr RecordedChosenVsBest kRecorded[] = {
    // b128k bf16 rows is ranked first and is the fastest measured.
    {"planner-20261130-h200-port.json", "configs/dlrm_dcnv2_mlperf.toml", 1.000},
    // b128k bf16 GEMMs with fp16 rows (2.50 M samples/s) is ranked first; b64k with fp32
    // rows measured 2.53 M.
    {"planner-20261130-h200-port.json", "configs/dlrm_dcnv2_capped.toml", 0.989},
    // The H200's plan (b256k bf16 rows, 16-bit residual stream) is ranked first and is the
    // fastest of the 14 recipes measured.
    {"planner-20261206-h200-mlperf-grid.json", "configs/dlrm_dcnv2_mlperf.toml", 1.000},
};
// The target: the chosen recipe within 3% of the fastest measured.
constexpr double kChosenVsBestTarget = 0.97;
// Rounding of the recorded figures.
constexpr double kRecordedTolerance = 0.0005;

double recorded_ratio(const std::string& path, const std::string& config) {
  const std::string file = std::filesystem::path(path).filename().string();
  for (const RecordedChosenVsBest& r : kRecorded)
    if (file == r.file && config == r.config) return r.ratio;
  return kChosenVsBestTarget;
}

TEST(PlannerReplay, ChosenVsBestNoWorseThanRecorded) {
  const PlanTarget t = shipped_target("h200_sxm");
  const std::vector<std::string> files = planner_records();
  ASSERT_FALSE(files.empty());
  const StepModelParams params = fit_on_planner_records(t);
  for (const std::string& f : files) {
    const PlannerRecord record = read_planner_record(f);
    for (const ChosenVsBest& c : replay_chosen_vs_best(measured(record, t), params)) {
      const double was = recorded_ratio(f, c.config) - kRecordedTolerance;
      std::printf("%s %s: chosen %s, best %s, %.3f (recorded %.3f)\n", f.c_str(), c.config.c_str(), c.chosen.c_str(),
                  c.best.c_str(), c.ratio, was);
      EXPECT_GE(c.ratio, was) << f << ": " << c.config << " chose " << c.chosen << ", best " << c.best;
      EXPECT_LE(c.ratio, 1.0);
    }
  }
}

// Each recipe of the full MLPerf grid measured on the H200 (docs/planner.md, "Measured on the
// H200"), predicted by the step model calibrated on every planner record as above: |predicted
// / measured - 1| in % as recorded when the grid was added. None may grow past its figure by
// more than half a point, nor past 10%.
struct RecordedGridError {
  const char* name;
  double error_pct;
};
const char kGridRecord[] = "planner-20261206-h200-mlperf-grid.json";
const RecordedGridError kGridErrors[] = {
    {"dlrm_dcnv2_mlperf-plan-h200_sxm", -0.4},
    {"dlrm_dcnv2_mlperf-plan-h100_sxm", +2.5},
    {"dlrm_dcnv2_mlperf-plan-a100_sxm_40gb", -6.0},
    {"mlperf-b32k-bf16-bf16rows", +1.0},
    {"mlperf-b32k-bf16-fp32rows", +2.6},
    {"mlperf-b32k-tf32-bf16rows", +1.2},
    {"mlperf-b32k-tf32-fp32rows", +2.4},
    {"mlperf-b64k-bf16-fp32rows", +0.9},
    {"mlperf-b64k-tf32-bf16rows", +1.9},
    {"mlperf-b64k-tf32-fp32rows", +2.2},
    {"mlperf-b128k-bf16-bf16rows", -0.6},
    {"mlperf-b128k-bf16-fp32rows", +0.1},
    {"mlperf-b128k-tf32-bf16rows", +1.2},
    {"mlperf-b256k-tf32-bf16rows", -2.0},
};
constexpr double kGridErrorSlackPct = 0.5;
constexpr double kGridErrorBoundPct = 10.0;

TEST(PlannerReplay, GridStepErrorsNoWorseThanRecorded) {
  const PlanTarget t = shipped_target("h200_sxm");
  const StepModelParams params = fit_on_planner_records(t);
  const std::vector<MeasuredRecipe> grid = measured(read_planner_record(kResultsDir + kGridRecord), t);
  ASSERT_EQ(grid.size(), std::size(kGridErrors));
  for (const RecordedGridError& r : kGridErrors) {
    const std::string label = std::string(kGridRecord) + ": " + r.name;
    const MeasuredRecipe* run = nullptr;
    for (const MeasuredRecipe& m : grid)
      if (m.label == label) run = &m;
    ASSERT_NE(run, nullptr) << label;
    const double error_pct = 100.0 * (predict_step(run->measurement.work, params).step_ms / run->measurement.step_ms - 1.0);
    std::printf("%-70s %+6.1f%% (recorded %+.1f%%)\n", label.c_str(), error_pct, r.error_pct);
    EXPECT_LE(std::abs(error_pct), std::abs(r.error_pct) + kGridErrorSlackPct) << label;
    EXPECT_LE(std::abs(error_pct), kGridErrorBoundPct) << label;
  }
}

// The check can fail: a record whose model-preferred recipe measured slow gives a ratio
// below 1, and a config without a measured step is refused.
TEST(PlannerReplay, AModelThatPrefersASlowRecipeScoresBelowOne) {
  const PlanTarget t = shipped_target("h200_sxm");
  std::vector<MeasuredRecipe> runs = measured(read_planner_record(kResultsDir + kPlannerRecordFile), t);
  std::vector<MeasuredRecipe> one_config;
  for (const MeasuredRecipe& r : runs)
    if (r.config == "configs/dlrm_dcnv2_mlperf.toml") one_config.push_back(r);
  ASSERT_GE(one_config.size(), 2u);
  const ChosenVsBest honest = replay_chosen_vs_best(one_config, t.step).front();
  for (MeasuredRecipe& r : one_config)
    if (r.label == honest.chosen) r.measurement.step_ms *= 3.0;  // the model's favourite, measured slow
  const ChosenVsBest slow = replay_chosen_vs_best(one_config, t.step).front();
  EXPECT_EQ(slow.chosen, honest.chosen);
  EXPECT_LT(slow.ratio, 0.5);
  one_config.front().measurement.step_ms = 0.0;
  EXPECT_THROW(replay_chosen_vs_best(one_config, t.step), ConfigError);
}

}  // namespace
}  // namespace hetrec::test
