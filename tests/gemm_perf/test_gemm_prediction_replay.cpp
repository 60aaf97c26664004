// Replays the recorded GEMM prediction checks (bench/gemm_prediction_check.py) through the
// selector the planner prices with: per shape of the record's oracle, packed as the
// dispatch describes it, the predicted time of the model's choice over the fastest time
// measured. Fails when the mean |log(predicted / measured)| of the aligned or the unaligned
// shapes gets worse than recorded. The records:
//   bench/results/gemm-prediction-20261207-h100-corpus.json (the H100's broad corpus)
//   bench/results/gemm-prediction-20261207-h200-20261130d.json (the H200's 19 families)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/text_file.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_oracle_measurements.h"
#include "gemm_perf/gemm_selector.h"
#include "gemm_perf_test_support.h"

namespace hetrec {
namespace {

const std::string kSource = std::string(HETREC_SOURCE_DIR) + "/";

class GemmPredictionReplay : public ::testing::TestWithParam<const char*> {};

TEST_P(GemmPredictionReplay, ErrorsNoWorseThanRecorded) {
  const nlohmann::json rec = nlohmann::json::parse(read_text_file(kSource + "bench/results/" + GetParam()));
  const nlohmann::json& metrics = rec.at("metrics");
  const Hardware hw = test::shipped_hardware(metrics.at("hw").get<std::string>());
  const GemmSelector selector = GemmSelector::for_hardware(hw, test::shipped_params(hw));
  const GemmOracle oracle = load_gemm_oracle(kSource + "bench/results/" + metrics.at("oracle").get<std::string>());
  double sum[2] = {0, 0};
  int shapes[2] = {0, 0};
  for (const OracleShape& s : oracle.shapes) {
    if (!s.skipped.empty() || s.precision == "fp8") continue;
    const GemmProblem p = with_packed_alignment(oracle_problem(s));
    if (p.accumulate) continue;
    double measured = s.heuristic_median_us;
    for (const OracleCandidate& c : s.candidates) measured = std::min(measured, c.median_us);
    const bool aligned = operands_fully_aligned(p);
    sum[aligned] += std::abs(std::log(selector.select(p).estimate.time_us / measured));
    ++shapes[aligned];
  }
  const double slack = 1e-3;  // the script rounds to 4 digits
  const char* groups[2] = {"all.unaligned", "all.aligned"};
  for (int aligned : {0, 1}) {
    const nlohmann::json& g = metrics.at("groups").at(groups[aligned]).at("all");
    EXPECT_EQ(shapes[aligned], g.at("shapes").get<int>()) << groups[aligned];
    const double error = sum[aligned] / shapes[aligned];
    std::printf("%s %s: %d shapes, mean |log(predicted / measured)| %.4f (recorded %.4f)\n", GetParam(),
                groups[aligned], shapes[aligned], error, g.at("mean_abs_log_error").get<double>());
    EXPECT_LE(error, g.at("mean_abs_log_error").get<double>() + slack) << groups[aligned];
  }
}

INSTANTIATE_TEST_SUITE_P(Records, GemmPredictionReplay,
                         ::testing::Values("gemm-prediction-20261207-h100-corpus.json",
                                           "gemm-prediction-20261207-h200-20261130d.json"),
                         [](const ::testing::TestParamInfo<const char*>& record) {
                           return std::string(record.param).find("h100") != std::string::npos ? std::string("H100Corpus")
                                                                                             : std::string("H200");
                         });

}  // namespace
}  // namespace hetrec
