// Planner results files (bench/plan_recipes.py) read back as step-model measurements:
// measured recipes only, each run once; the recipe's precisions and host tables reach the
// step terms; malformed files are ConfigErrors naming the file and the key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/error.h"
#include "plan/planner_record.h"
#include "plan/step_model.h"
#include "plan_test_support.h"

namespace hetrec::test {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("hetrec_planner_record_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

// The shape bench/plan_recipes.py writes (fields the reader does not use trimmed).
const char* kRecord = R"({
 "benchmark": "planner", "date": "2026-11-29", "gpu": "NVIDIA H200", "commit": "abc", "command": "x",
 "metrics": {"recipes": [
  {"name": "a-bf16-host", "role": "given", "config": "configs/dlrm_dcnv2_mlperf.toml",
   "recipe": {"batch_size": 65536, "dense": "bf16", "row_dtype": "fp16", "host_tables": ["t0", "t9"]},
   "measured": {"step_ms_median": 61.5}},
  {"name": "b-repeat", "role": "planned", "config": "configs/dlrm_dcnv2_mlperf.toml", "same_run_as": "a-bf16-host",
   "recipe": {"batch_size": 65536, "dense": "bf16", "row_dtype": "fp16", "host_tables": ["t0", "t9"]},
   "measured": {"step_ms_median": 61.5}},
  {"name": "c-failed", "role": "given", "config": "configs/dlrm_dcnv2_mlperf.toml", "status": "training failed",
   "recipe": {"batch_size": 8192, "dense": "fp32", "row_dtype": "fp32", "host_tables": []}},
  {"name": "d-tf32", "role": "given", "config": "configs/dlrm_dcnv2_mlperf.toml",
   "recipe": {"batch_size": 16384, "dense": "tf32", "row_dtype": "fp32", "host_tables": []},
   "measured": {"step_ms_median": 20.25, "device_used_bytes": 10485760000}}
 ]}
})";

TEST(PlannerRecord, ReadsMeasuredRecipesOnce) {
  const PlannerRecord r = read_planner_record(write_temp("planner-ok.json", kRecord));
  EXPECT_EQ(r.gpu, "NVIDIA H200");
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].label, "planner-ok.json: a-bf16-host");
  EXPECT_EQ(r.runs[0].batch, 65536);
  EXPECT_EQ(r.runs[0].dense, DensePrecision::bf16);
  EXPECT_EQ(r.runs[0].row_dtype, DType::f16);
  EXPECT_EQ(r.runs[0].host_tables, (std::vector<std::string>{"t0", "t9"}));
  EXPECT_DOUBLE_EQ(r.runs[0].step_ms, 61.5);
  EXPECT_EQ(r.runs[1].dense, DensePrecision::tf32);
  EXPECT_DOUBLE_EQ(r.runs[1].step_ms, 20.25);
  EXPECT_DOUBLE_EQ(r.runs[0].device_used_bytes, 0.0);  // not recorded
  EXPECT_DOUBLE_EQ(r.runs[1].device_used_bytes, 10485760000.0);

  // As measurements: host tables put link terms in the embedding phases, bf16 GEMMs on
  // the 16-bit pipe; the tf32 run has neither.
  const PlanTarget h200 = shipped_target("h200_sxm");
  const IdDistribution ids{IdLaw::zipf, 1.05};
  const StepMeasurement a = planner_measurement(r.runs[0], mlperf_model(), mlperf_optim(), ids, h200.gemm);
  const StepMeasurement d = planner_measurement(r.runs[1], mlperf_model(), mlperf_optim(), ids, h200.gemm);
  const auto count = [](const StepWork& w, StepFactor f) {
    int n = 0;
    for (const StepTerm& t : w.terms) n += t.factor == f;
    return n;
  };
  EXPECT_EQ(count(a.work, StepFactor::host_tables), 2);
  EXPECT_GT(count(a.work, StepFactor::gemm_16bit), 0);
  EXPECT_EQ(count(d.work, StepFactor::host_tables), 0);
  EXPECT_EQ(count(d.work, StepFactor::gemm_16bit), 0);
  // fp16 rows: the update's rounding of the distinct rows (one term); fp32 rows: none.
  EXPECT_EQ(count(a.work, StepFactor::fp16_rounding_us), 1);
  EXPECT_EQ(count(d.work, StepFactor::fp16_rounding_us), 0);
  EXPECT_EQ(a.work.batch, 65536);
  EXPECT_DOUBLE_EQ(a.step_ms, 61.5);

  PlannerRun bad = r.runs[0];
  bad.host_tables = {"t99"};
  EXPECT_THROW(planner_measurement(bad, mlperf_model(), mlperf_optim(), ids, h200.gemm), ConfigError);
}

// The recipe's residual stream reaches the cross net's terms; a record without the field
// runs the config's (fp32 for the MLPerf config).
TEST(PlannerRecord, ResidualStreamReachesTheStepTerms) {
  const PlannerRecord r = read_planner_record(write_temp("planner-stream.json", R"({
 "benchmark": "planner", "date": "2026-12-06", "gpu": "NVIDIA H200", "metrics": {"recipes": [
  {"name": "s16", "config": "configs/dlrm_dcnv2_mlperf.toml", "measured": {"step_ms_median": 84.5},
   "recipe": {"batch_size": 262144, "dense": "bf16", "row_dtype": "bf16", "cross_residual": "16bit", "host_tables": []}},
  {"name": "s32", "config": "configs/dlrm_dcnv2_mlperf.toml", "measured": {"step_ms_median": 90.1},
   "recipe": {"batch_size": 262144, "dense": "bf16", "row_dtype": "bf16", "cross_residual": "fp32", "host_tables": []}},
  {"name": "old", "config": "configs/dlrm_dcnv2_mlperf.toml", "measured": {"step_ms_median": 90.1},
   "recipe": {"batch_size": 262144, "dense": "bf16", "row_dtype": "bf16", "host_tables": []}}
 ]}})"));
  ASSERT_EQ(r.runs.size(), 3u);
  EXPECT_EQ(r.runs[0].cross_residual_16bit, std::optional<bool>(true));
  EXPECT_EQ(r.runs[1].cross_residual_16bit, std::optional<bool>(false));
  EXPECT_FALSE(r.runs[2].cross_residual_16bit.has_value());
  const PlanTarget h200 = shipped_target("h200_sxm");
  const IdDistribution ids{IdLaw::zipf, 1.05};
  const auto cross_fwd_us = [&](const PlannerRun& run) {
    double us = 0.0;
    for (const StepTerm& t : planner_measurement(run, mlperf_model(), mlperf_optim(), ids, h200.gemm).work.terms)
      if (t.phase == StepPhase::interaction_fwd) us += t.base;
    return us;
  };
  // The 16-bit stream's forward pass moves fewer bytes.
  EXPECT_LT(cross_fwd_us(r.runs[0]), cross_fwd_us(r.runs[1]));
  EXPECT_DOUBLE_EQ(cross_fwd_us(r.runs[2]), cross_fwd_us(r.runs[1]));
}

TEST(PlannerRecord, MalformedFilesNameTheKey) {
  const auto expect_error = [](const std::string& name, const std::string& text, const std::string& fragment) {
    try {
      read_planner_record(write_temp(name, text));
      FAIL() << "no error for " << name;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  expect_error("planner-e2e.json", R"({"benchmark": "e2e", "gpu": "x", "date": "d", "metrics": {}})", "expected 'planner'");
  expect_error("planner-json.json", "{", "invalid JSON");
  expect_error("planner-dense.json",
               R"({"benchmark": "planner", "gpu": "x", "date": "d", "metrics": {"recipes": [{"name": "n", "config": "c",
                   "recipe": {"batch_size": 1, "dense": "fp64", "row_dtype": "fp32", "host_tables": []},
                   "measured": {"step_ms_median": 1}}]}})",
               "recipes[0].recipe.dense");
  expect_error("planner-time.json",
               R"({"benchmark": "planner", "gpu": "x", "date": "d", "metrics": {"recipes": [{"name": "n", "config": "c",
                   "recipe": {"batch_size": 1, "dense": "fp32", "row_dtype": "fp32", "host_tables": []},
                   "measured": {}}]}})",
               "step_ms_median");
  expect_error("planner-stream.json",
               R"({"benchmark": "planner", "gpu": "x", "date": "d", "metrics": {"recipes": [{"name": "n", "config": "c",
                   "recipe": {"batch_size": 1, "dense": "bf16", "row_dtype": "fp32", "cross_residual": "bf16",
                   "host_tables": []}, "measured": {"step_ms_median": 1}}]}})",
               "recipes[0].recipe.cross_residual");
  EXPECT_THROW(read_planner_record("/nonexistent/planner-x.json"), IoError);
}

}  // namespace
}  // namespace hetrec::test
