// Replays the recorded H200 oracles (bench/results/gemm-oracle-20261130-h200.json.xz: 420
// shapes in fp32, tf32, bf16, fp16 and fp8; gemm-oracle-20261130d-h200.json.xz: 477, timed
// behind a stream gate) through the calibration and the held-out selection statistics, and
// fails if they get worse than the recorded figures (bench/results/gemm-selection-20261130-h200.json,
// gemm-selection-20261130-h200-gated.json).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text_file.h"
#include "gemm_perf/gemm_calibration_run.h"
#include "gemm_perf/gemm_config.h"
#include "gemm_perf_test_support.h"

namespace hetrec {
namespace {

const std::string kResults = std::string(HETREC_SOURCE_DIR) + "/bench/results/";
// The recorded calibration: its results record and (with "-params.toml") fitted parameters.
const std::string kRecorded = "gemm-selection-20261130-h200";

// Calibrates on the oracle as `hetrec gemm calibrate` did for the record and checks the
// held-out figures against the recorded ones.
void expect_held_out_no_worse_than_recorded(const std::string& oracle_file, const std::string& record) {
  const Hardware hw = test::shipped_hardware("h200_sxm");
  const GemmOracle oracle = load_gemm_oracle(kResults + oracle_file);
  const nlohmann::json recorded = nlohmann::json::parse(read_text_file(kResults + record + ".json"));
  const GemmCalibrationRun run = run_gemm_calibration(hw, oracle, test::shipped_params(hw), 0.05);

  // At most 5% of the shapes are seen by the fit; the others are held out.
  EXPECT_LE(double(run.calibration_ids.size()), 0.05 * double(run.conversion.shapes.size()));
  EXPECT_EQ(run.calibration_ids.size() + run.held_out_shapes, run.conversion.shapes.size());
  EXPECT_EQ(run.conversion.shapes.size(), recorded["shapes"]["used"].get<std::size_t>());

  const nlohmann::json& rec = recorded["held_out_fitted_params"];
  const double slack = 1e-6;  // the fit is deterministic; only printing rounds
  EXPECT_GE(run.held_out_after.geomean_ratio, rec["geomean_oracle_over_selected"].get<double>() - slack);
  EXPECT_GE(run.held_out_after.p5_ratio, rec["p5_oracle_over_selected"].get<double>() - slack);
  EXPECT_GE(run.held_out_after.mean_spearman, rec["mean_spearman"].get<double>() - slack);
  EXPECT_LE(run.held_out_after.mean_abs_log_error, rec["mean_abs_log_error"].get<double>() + slack);
  EXPECT_EQ(run.conversion.undescribed, recorded["candidates"]["not_describable"].get<std::size_t>());
  EXPECT_EQ(run.conversion.kernel_chosen_tiles, recorded["candidates"]["kernel_chosen_tiles"].get<std::size_t>());
  // The heuristic figures come from the measurements alone.
  EXPECT_NEAR(run.held_out_after.heuristic_geomean_ratio, rec["heuristic_geomean_oracle_over_selected"].get<double>(),
              1e-9);
  // The fit improves on the starting parameters on shapes it never saw.
  EXPECT_GT(run.held_out_after.geomean_ratio, run.held_out_before.geomean_ratio);
  EXPECT_LT(run.held_out_after.mean_abs_log_error, run.held_out_before.mean_abs_log_error);
}

TEST(GemmCalibrationReplay, HeldOutSelectionIsNoWorseThanRecorded) {
  expect_held_out_no_worse_than_recorded("gemm-oracle-20261130-h200.json.xz", kRecorded);
}

// The oracle timed behind a stream gate (launches back to back, no host gaps): 477 shapes.
TEST(GemmCalibrationReplay, HeldOutSelectionOnTheGatedOracleIsNoWorseThanRecorded) {
  expect_held_out_no_worse_than_recorded("gemm-oracle-20261130d-h200.json.xz", "gemm-selection-20261130-h200-gated");
}

// The recorded parameters judged on shapes no fit saw (the fp32 GEMMs at batch 64K): every
// shape is judged, and the figures may not drop below the recorded ones.
TEST(GemmCalibrationReplay, JudgedParametersOnUnseenShapesAreNoWorseThanRecorded) {
  const Hardware hw = test::shipped_hardware("h200_sxm");
  const GemmOracle oracle = load_gemm_oracle(kResults + "gemm-oracle-20261130c-h200-fp32-b64k.json.xz");
  const nlohmann::json recorded =
      nlohmann::json::parse(read_text_file(kResults + "gemm-selection-20261130c-h200-fp32-b64k.json"));
  const GemmCalibrationRun run = judge_gemm_params(hw, oracle, load_gemm_params(kResults + kRecorded + "-params.toml"));
  EXPECT_TRUE(run.judged_only);
  EXPECT_TRUE(run.calibration_ids.empty());
  EXPECT_EQ(run.held_out_shapes, run.conversion.shapes.size());
  EXPECT_EQ(run.held_out_choices.size(), run.conversion.shapes.size());
  EXPECT_EQ(run.conversion.shapes.size(), recorded["shapes"]["used"].get<std::size_t>());
  EXPECT_TRUE(recorded["judged_only"].get<bool>());
  const nlohmann::json& rec = recorded["all_shapes_judged_params"];
  const double slack = 1e-6;
  EXPECT_GE(run.held_out_after.geomean_ratio, rec["geomean_oracle_over_selected"].get<double>() - slack);
  EXPECT_GE(run.held_out_after.p5_ratio, rec["p5_oracle_over_selected"].get<double>() - slack);
  EXPECT_NEAR(run.held_out_after.heuristic_geomean_ratio, rec["heuristic_geomean_oracle_over_selected"].get<double>(),
              1e-9);
  // Judging fits nothing: the judged parameters are the given ones.
  EXPECT_EQ(run.fitted.l2_bytes_per_clock_per_unit,
            load_gemm_params(kResults + kRecorded + "-params.toml").l2_bytes_per_clock_per_unit);
}

// The second H200 record also times every configuration on the heuristic's list: the best of
// each list, on the recorded held-out shapes, is recomputed from the measurements alone.
TEST(GemmCalibrationReplay, BestOfTheHeuristicsListIsRecomputedFromTheRecord) {
  const std::string oracle_path = kResults + "gemm-oracle-20261130b-h200.json.xz";
  const GemmOracle oracle = load_gemm_oracle(oracle_path);
  const nlohmann::json recorded =
      nlohmann::json::parse(read_text_file(kResults + "gemm-selection-20261130b-h200.json"));
  GemmCalibrationRun run;
  for (const nlohmann::json& c : recorded["held_out_choices"]) {
    GemmCalibrationRun::ShapeChoice choice;
    choice.id = c["id"].get<std::string>();
    choice.oracle_us = c["oracle_us"].get<double>();
    run.held_out_choices.push_back(choice);
  }
  compare_heuristic_lists(run, oracle, oracle, oracle_path);
  ASSERT_TRUE(run.heuristic_lists.has_value());
  const nlohmann::json& rec = recorded["heuristic_lists"];
  const GemmCalibrationRun::HeuristicLists& h = *run.heuristic_lists;
  EXPECT_EQ(h.shapes, rec["held_out_shapes"].get<std::size_t>());
  EXPECT_NEAR(h.best_of_list_geomean, rec["best_of_list_geomean_oracle_over_selected"].get<double>(), 1e-12);
  EXPECT_NEAR(h.best_of_list_p5, rec["best_of_list_p5_oracle_over_selected"].get<double>(), 1e-12);
  // Every listed configuration was timed; a list headed by the top-1 does better than it.
  EXPECT_DOUBLE_EQ(h.mean_timed, h.mean_listed);
  EXPECT_GT(h.best_of_list_geomean, recorded["metrics"]["cublaslt_top1_geomean"].get<double>());
  EXPECT_LE(h.best_of_list_geomean, 1.0);
  EXPECT_GT(h.query_us_median, 0.0);

  // Lists from another GPU, or a record without lists, are refused by name.
  GemmOracle other = oracle;
  other.gpu = "NVIDIA H100";
  EXPECT_THROW(compare_heuristic_lists(run, oracle, other, "other.json"), ConfigError);
  const GemmOracle old = load_gemm_oracle(kResults + "gemm-oracle-20261130-h200.json.xz");
  try {
    compare_heuristic_lists(run, oracle, old, "old.json");
    ADD_FAILURE() << "a record without lists was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("old.json: no shape records the heuristic's list"), std::string::npos)
        << e.what();
  }
}

// How far the first record's choices hold on the repeat, recomputed from the measurements
// alone and checked against the calibration record's `reproducibility`.
OracleReproducibility expect_recorded_reproducibility(const std::string& first_file, const std::string& repeat_file,
                                                      const std::string& record) {
  const OracleReproducibility r = oracle_reproducibility(load_gemm_oracle(kResults + first_file),
                                                         load_gemm_oracle(kResults + repeat_file), "repeat");
  const nlohmann::json rec = nlohmann::json::parse(read_text_file(kResults + record))["reproducibility"];
  EXPECT_EQ(r.all.shapes, rec["all"]["shapes"].get<std::size_t>());
  EXPECT_NEAR(r.all.geomean, rec["all"]["geomean_oracle_over_selected"].get<double>(), 1e-12);
  EXPECT_NEAR(r.short_kernels.geomean, rec["short_kernels"]["geomean_oracle_over_selected"].get<double>(), 1e-12);
  EXPECT_NEAR(r.short_kernels.p5, rec["short_kernels"]["p5_oracle_over_selected"].get<double>(), 1e-12);
  EXPECT_NEAR(r.longer_kernels.p5, rec["longer_kernels"]["p5_oracle_over_selected"].get<double>(), 1e-12);
  EXPECT_EQ(r.configurations, rec["configurations_in_both"].get<std::size_t>());
  return r;
}

// The two H200 records of the same suite timed as the host enqueued each launch.
TEST(GemmCalibrationReplay, ReproducibilityOfTheOracleIsRecomputedFromTheRecords) {
  const OracleReproducibility r = expect_recorded_reproducibility(
      "gemm-oracle-20261130b-h200.json.xz", "gemm-oracle-20261130-h200.json.xz", "gemm-selection-20261130b-h200.json");
  // Short kernels reproduce worse than longer ones.
  EXPECT_LT(r.short_kernels.geomean, r.longer_kernels.geomean);
}

// The two gated records of the same suite reproduce each other's choices far better than
// the two records timed as the host enqueued each launch, above all on short kernels.
TEST(GemmCalibrationReplay, GatedTimingReproducesTheOraclesChoices) {
  const OracleReproducibility gated =
      expect_recorded_reproducibility("gemm-oracle-20261130d-h200.json.xz", "gemm-oracle-20261130e-h200.json.xz",
                                      "gemm-selection-20261130-h200-gated.json");
  const OracleReproducibility enqueued =
      oracle_reproducibility(load_gemm_oracle(kResults + "gemm-oracle-20261130b-h200.json.xz"),
                             load_gemm_oracle(kResults + "gemm-oracle-20261130-h200.json.xz"), "repeat");
  EXPECT_GT(gated.all.geomean, enqueued.all.geomean);
  EXPECT_GT(gated.short_kernels.geomean, enqueued.short_kernels.geomean);
  EXPECT_LT(gated.p90_abs_log_ratio, enqueued.p90_abs_log_ratio);
  // The targets of the selection lie within what the measurements reproduce.
  EXPECT_GT(gated.all.geomean, 0.98);
  EXPECT_GT(gated.all.p5, 0.90);
}

TEST(GemmCalibrationReplay, KernelFamilyRoundTripsThroughText) {
  GemmConfig c;
  c.family = 66;
  const GemmConfig back = parse_gemm_config(to_string(c), "test");
  EXPECT_EQ(back, c);
  EXPECT_EQ(parse_gemm_config(to_string(GemmConfig{}), "test").family, -1);
  c.family_variant = 3;  // a custom option of the family
  EXPECT_EQ(parse_gemm_config(to_string(c), "test"), c);
  EXPECT_NE(to_string(c).find(" variant=3"), std::string::npos);
}

// A variant has its own correction where fitted, else its family's, else none.
TEST(GemmCalibrationReplay, VariantsFallBackToTheirFamilysCorrection) {
  GemmModelParams p;
  p.family_efficiency = {{"66", 1.2}, {"66.3", 0.8}};
  EXPECT_EQ(p.family_factor(66), 1.2);
  EXPECT_EQ(p.family_factor(66, 3), 0.8);
  EXPECT_EQ(p.family_factor(66, 5), 1.2);
  EXPECT_EQ(p.family_factor(21, 3), 1.0);
  EXPECT_EQ(family_key(66, 3), "66.3");
  EXPECT_EQ(family_key(66), "66");
}

TEST(GemmCalibrationReplay, FittedParametersRoundTripThroughTheParamsFile) {
  const GemmModelParams p = load_gemm_params(kResults + kRecorded + "-params.toml");
  EXPECT_TRUE(p.calibrated);
  EXPECT_FALSE(p.family_efficiency.empty());
  const std::string path = ::testing::TempDir() + "/params_roundtrip.toml";
  save_gemm_params(p, path);
  const GemmModelParams q = load_gemm_params(path);
  EXPECT_EQ(q.family_efficiency, p.family_efficiency);
  EXPECT_EQ(gemm_params_fingerprint(q), gemm_params_fingerprint(p));
}

}  // namespace
}  // namespace hetrec
