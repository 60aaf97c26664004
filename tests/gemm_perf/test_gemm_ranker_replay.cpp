// Replays the recorded learned-ranker evaluation (bench/results/gemm-ranker-20261205-h200.json)
// through the C++ path the engine uses: the features recomputed from the recorded oracle
// (bench/results/gemm-oracle-20261130d-h200.json.xz), the fold models of
// gemm/rankers/h200-20261130d.json.xz loaded through XGBoost's C API, every shape predicted by
// the model that never saw its layer family. Fails when the held-out figures get worse.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/text_file.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_ranker.h"
#include "gemm_perf_test_support.h"

namespace hetrec {
namespace {

const std::string kSource = std::string(HETREC_SOURCE_DIR) + "/";
const std::string kRecord = kSource + "bench/results/gemm-ranker-20261205-h200.json";

TEST(GemmRankerReplay, HeldOutByFamilyNoWorseThanRecorded) {
  const nlohmann::json rec = nlohmann::json::parse(read_text_file(kRecord));
  const Hardware hw = test::shipped_hardware("h200_sxm");
  const GemmOracle oracle = load_gemm_oracle(kSource + rec.at("oracle").get<std::string>());
  const GemmRankerValidators device{oracle.gpu, oracle.driver, oracle.cublaslt_version, ""};
  const RankerEvaluation e = evaluate_ranker_held_out(kSource + rec.at("ranker_file").get<std::string>(), device, hw,
                                                      test::shipped_params(hw), ranker_shapes(hw, oracle));
  EXPECT_EQ(e.shapes, rec.at("shapes").get<std::size_t>());
  const double slack = 1e-6;  // the features and trees are deterministic; only float sums differ
  const auto at_least = [&](double got, const char* group, const char* key) {
    EXPECT_GE(got, rec.at(group).at(key).get<double>() - slack) << group << "." << key;
  };
  at_least(e.routed_geomean, "routed", "geomean");
  at_least(e.routed_p5, "routed", "p5");
  at_least(e.routed_time_weighted, "routed", "time_weighted");
  at_least(e.ranker_geomean, "ranker", "geomean");
  at_least(e.ranker_p5, "ranker", "p5");
  // The heuristic beside it is a measured fact of the corpus, not a figure that may improve.
  EXPECT_NEAR(e.heuristic_geomean, rec.at("heuristic").at("geomean").get<double>(), slack);
  EXPECT_NEAR(e.heuristic_time_weighted, rec.at("heuristic").at("time_weighted").get<double>(), slack);
  // What the record claims: the router never loses time to the heuristic overall.
  EXPECT_GE(e.routed_time_weighted, e.heuristic_time_weighted);
}

}  // namespace
}  // namespace hetrec
