// Replays the recorded learned-ranker evaluations through the C++ path the engine uses: the
// features recomputed from each record's oracle, the fold models of its ranker file loaded
// through XGBoost's C API, every shape predicted by the model that never saw its layer family.
// Fails when the held-out figures get worse. The records:
//   bench/results/gemm-ranker-20261207-h200.json (H200, 19 families: gemm/rankers/h200-20261130d.json.xz)
//   bench/results/gemm-ranker-20261207-h100-corpus.json (H100, the broad corpus's 63 families:
//   gemm/rankers/h100-20261207.json.xz)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/text_file.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_ranker.h"
#include "gemm_perf_test_support.h"

namespace hetrec {
namespace {

const std::string kSource = std::string(HETREC_SOURCE_DIR) + "/";

class GemmRankerReplay : public ::testing::TestWithParam<const char*> {};

TEST_P(GemmRankerReplay, HeldOutByFamilyNoWorseThanRecorded) {
  const nlohmann::json rec = nlohmann::json::parse(read_text_file(kSource + "bench/results/" + GetParam()));
  // Records written before the report named its hardware description were H200 ones.
  const Hardware hw = test::shipped_hardware(rec.value("hw", std::string("h200_sxm")));
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
  // The timed shortlist's figures, where the record has them, in the order of kShortlistSizes.
  if (rec.contains("timed_shortlist")) {
    const nlohmann::json& sizes = rec.at("timed_shortlist").at("sizes");
    ASSERT_EQ(sizes.size(), e.shortlist.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_EQ(sizes[i].at("k").get<int>(), e.shortlist[i].k);
      EXPECT_GE(e.shortlist[i].geomean, sizes[i].at("geomean").get<double>() - slack) << "top-" << e.shortlist[i].k;
      EXPECT_GE(e.shortlist[i].p5, sizes[i].at("p5").get<double>() - slack) << "top-" << e.shortlist[i].k;
      // With the heuristic's top-1 always timed, a shortlist never loses to it on any shape.
      EXPECT_GE(e.shortlist[i].p5, e.heuristic_p5);
      EXPECT_GE(e.shortlist[i].time_weighted, e.heuristic_time_weighted);
    }
  }
  // What the record claims: the router never loses time to the heuristic overall.
  EXPECT_GE(e.routed_time_weighted, e.heuristic_time_weighted);
}

INSTANTIATE_TEST_SUITE_P(Records, GemmRankerReplay,
                         ::testing::Values("gemm-ranker-20261207-h200.json", "gemm-ranker-20261207-h100-corpus.json"),
                         [](const ::testing::TestParamInfo<const char*>& record) {
                           return std::string(record.param).find("h100") != std::string::npos ? std::string("H100Corpus")
                                                                                             : std::string("H200");
                         });

}  // namespace
}  // namespace hetrec
