// The step model's prediction for a GPU it has no record of, against a measurement made
// afterwards: bench/results/h100-prediction-20261206.json holds the one-GPU steps measured
// on an H100 SXM (full MLPerf DLRM-DCNv2 at batch 131072, the capped tables at 16384, the
// engine with the cross net backward's pass schedule and the H100 winners tuned in the same
// call), kept out of the calibration (the sm_90 factors come from the H200's records). The
// planner, calibrated as `hetrec plan` calibrates, predicts each at the measured recipe;
// the test fails when an error grows past the one recorded here (plus the calibration's
// room to move as records are added) or past the 10% the planner promises.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "plan/search.h"
#include "plan_test_support.h"
#include "train/config.h"
#include "train/plan_targets.h"

namespace hetrec::test {
namespace {

const std::string kRecord = kResultsDir + "h100-prediction-20261206.json";
// The errors when the record was made: full +1.2%, capped +9.4%. (The engine before the
// schedule, with built-in kernels, h100-prediction-20261205.json: -4.3% and +9.1% then.)
const std::map<std::string, double> kRecordedError = {{"full-b128k", 0.012}, {"capped-b16k", 0.094}};
constexpr double kTolerance = 0.01;
constexpr double kPromise = 0.10;

DType rows_of(const std::string& name) {
  if (name == "fp32") return DType::f32;
  if (name == "bf16") return DType::bf16;
  ADD_FAILURE() << "rows " << name;
  return DType::f32;
}

TEST(UnmeasuredGpuPrediction, H100StepsWithinTheRecordedError) {
  std::ifstream in(kRecord);
  ASSERT_TRUE(in.good()) << kRecord;
  const nlohmann::json record = nlohmann::json::parse(in);
  ASSERT_EQ(record.at("hardware"), "h100_sxm");
  const auto fitted = calibrate_from_records(kResultsDir, kHwDir, /*no_calibration=*/false);
  const auto& runs = record.at("metrics").at("runs");
  ASSERT_EQ(runs.size(), kRecordedError.size());
  for (const auto& run : runs) {
    const std::string workload = run.at("workload");
    const RunConfig cfg = load_run_config(std::string(HETREC_SOURCE_DIR) + "/" + run.at("config").get<std::string>());
    const Workload w{cfg.model, cfg.optim, IdDistribution{IdLaw::zipf, cfg.data.synthetic.zipf_exponent}};
    PlanConstraints c;
    c.min_batch = c.max_batch = run.at("batch").get<int64_t>();
    c.dense = {DensePrecision::bf16};
    c.rows = {rows_of(run.at("rows"))};
    c.headroom = 0.05;  // the full tables' batch 131072 ran in 73 of the H100's 79 GiB
    const PlanResult plan = plan_recipes(w, make_plan_target("h100_sxm", kHwDir, fitted), c);
    ASSERT_EQ(plan.best().recipe.batch, c.max_batch) << workload;
    ASSERT_TRUE(plan.best().recipe.cross_residual_16bit) << workload << ": measured with the 16-bit residual";
    const double measured = run.at("measured_step_ms").get<double>();
    const double error = plan.best().step.step_ms / measured - 1.0;
    std::printf("%s: predicted %.2f ms, measured %.2f ms, error %+.4f (recorded %+.4f)\n", workload.c_str(),
                plan.best().step.step_ms, measured, error, kRecordedError.at(workload));
    EXPECT_LE(std::abs(error), std::abs(kRecordedError.at(workload)) + kTolerance) << workload;
    EXPECT_LE(std::abs(error), kPromise) << workload;
  }
}

}  // namespace
}  // namespace hetrec::test
