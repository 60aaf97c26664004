// load_gemm_oracle (gemm_perf/gemm_oracle.h) on results files written by the test, in the
// format `hetrec gemm bench` writes: every field read back, and bad files rejected with
// the JSON path of the fault.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_oracle_repeat.h"

namespace hetrec {
namespace {

using nlohmann::json;

// A row in the order of kOracleCandidateColumns: algo 66, tile 128x256 (id 23) or
// 128x128 (id 20), stages 64x4 (id 16), swizzling on, cluster 2x1x1 (id 3).
json candidate(int tile_id, double median) {
  return json::array({66, tile_id, 16, 1, 0, 1, 3, 0, 1024, median, median - 1, 1e-6, 128,
                      tile_id == 23 ? 256 : 128, 64, 4, 2, 1, 8});
}

std::vector<std::string> columns() {
  return std::vector<std::string>(std::begin(kOracleCandidateColumns), std::end(kOracleCandidateColumns));
}

json fixture() {
  json shape{{"id", "dlrm_mlperf.top1.fwd.b4096.bf16"},
             {"m", 4096},
             {"n", 1024},
             {"k", 1024},
             {"trans_a", false},
             {"trans_b", true},
             {"precision", "bf16"},
             {"epilogue", "relu_bias"},
             {"d_type", "bf16"},
             {"copies", 12},
             {"heuristic", {{"key", "a66.t23.s16.k1.r0.w1.c3.o0"}, {"enumerated", true}, {"index", 1},
                            {"median_us", 20.5}, {"min_us", 19.0}, {"config", "x"}}},
             {"candidates", json::array({candidate(20, 25.0), candidate(23, 20.25)})},
             {"rejected", json::array({{{"key", "a1.t2.s3.k4.r2.w0.c0.o0"}, {"reason", "mismatch"}, {"max_err", 0.3}}})}};
  return json{{"schema", kGemmOracleSchema},
              {"date", "2026-11-29T00:00:00Z"},
              {"gpu", "NVIDIA H200"},
              {"driver", "13.0"},
              {"cublaslt_version", "130000"},
              {"cuda_runtime", "13.0"},
              {"commit", "abc"},
              {"command", "hetrec gemm bench --out x.json"},
              {"launches", 25},
              {"warmup", 5},
              {"rotation_bytes", 125829120},
              {"candidate_columns", columns()},
              {"shapes", json::array({shape})}};
}

std::string write_fixture(const json& j, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("hetrec_oracle_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << j.dump();
  return path;
}

TEST(GemmOracle, ReadsEveryField) {
  const GemmOracle o = load_gemm_oracle(write_fixture(fixture(), "good.json"));
  EXPECT_EQ(o.gpu, "NVIDIA H200");
  EXPECT_EQ(o.launches, 25);
  EXPECT_EQ(o.rotation_bytes, 125829120u);
  ASSERT_EQ(o.shapes.size(), 1u);
  const OracleShape& s = o.shapes[0];
  EXPECT_EQ(s.id, "dlrm_mlperf.top1.fwd.b4096.bf16");
  EXPECT_EQ(s.m, 4096);
  EXPECT_TRUE(s.trans_b);
  EXPECT_FALSE(s.trans_a);
  EXPECT_EQ(s.epilogue, "relu_bias");
  ASSERT_EQ(s.candidates.size(), 2u);
  ASSERT_TRUE(s.heuristic_index.has_value());
  EXPECT_EQ(*s.heuristic_index, 1u);
  EXPECT_DOUBLE_EQ(s.heuristic_median_us, 20.5);
  const OracleCandidate& c = s.candidates[1];
  EXPECT_EQ(c.key, "a66.t23.s16.k1.r0.w1.c3.o0");
  EXPECT_EQ(c.tile_id, 23);
  EXPECT_EQ(c.cluster_id, 3);
  EXPECT_EQ(c.workspace, 1024u);
  EXPECT_DOUBLE_EQ(c.max_error, 1e-6);
  EXPECT_DOUBLE_EQ(c.median_us, 20.25);
  EXPECT_DOUBLE_EQ(c.min_us, 19.25);
  EXPECT_EQ(c.config.tile_m, 128);
  EXPECT_EQ(c.config.tile_n, 256);
  EXPECT_EQ(c.config.stages, 4);
  EXPECT_EQ(c.config.cluster_m, 2);
  EXPECT_EQ(c.config.swizzle, 8);
  EXPECT_EQ(c.config.decomposition, GemmDecomposition::data_parallel);
  ASSERT_EQ(s.rejected.size(), 1u);
  EXPECT_EQ(s.rejected[0].reason, "mismatch");
  EXPECT_DOUBLE_EQ(s.rejected[0].max_error, 0.3);
}

TEST(GemmOracle, SkippedShapesCarryNoCandidates) {
  json j = fixture();
  j["shapes"].push_back({{"id", "x.fp8"}, {"m", 1}, {"n", 16}, {"k", 16}, {"trans_a", false}, {"trans_b", true},
                         {"precision", "fp8"}, {"epilogue", "none"}, {"d_type", "bf16"},
                         {"skipped", "cuBLASLt's heuristic has no algorithm for this shape"}});
  const GemmOracle o = parse_gemm_oracle(j.dump(), "inline");
  ASSERT_EQ(o.shapes.size(), 2u);
  EXPECT_EQ(o.shapes[1].skipped, "cuBLASLt's heuristic has no algorithm for this shape");
  EXPECT_TRUE(o.shapes[1].candidates.empty());
}

void expect_error(const json& j, const std::string& fragment) {
  try {
    (void)parse_gemm_oracle(j.dump(), "fixture.json");
    ADD_FAILURE() << "no error; expected one naming " << fragment;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fixture.json"), std::string::npos) << e.what();
  }
}

// Records since the heuristic's list was added carry it in order, with the query's CPU time;
// older ones read as an empty list.
TEST(GemmOracle, ReadsTheHeuristicsList) {
  json j = fixture();
  EXPECT_TRUE(parse_gemm_oracle(j.dump(), "x").shapes[0].heuristic_listed.empty());
  j["shapes"][0]["heuristic"]["listed"] = {"a66.t23.s16.k1.r0.w1.c3.o0", "a66.t20.s16.k1.r0.w1.c3.o0"};
  j["shapes"][0]["heuristic"]["list_query_us"] = 81.5;
  const OracleShape s = parse_gemm_oracle(j.dump(), "x").shapes[0];
  EXPECT_EQ(s.heuristic_listed,
            (std::vector<std::string>{"a66.t23.s16.k1.r0.w1.c3.o0", "a66.t20.s16.k1.r0.w1.c3.o0"}));
  EXPECT_DOUBLE_EQ(s.heuristic_list_query_us, 81.5);
  j["shapes"][0]["heuristic"]["listed"][1] = 7;
  expect_error(j, "$.shapes[0].heuristic.listed[1]: expected a configuration key (string)");
  j["shapes"][0]["heuristic"]["listed"] = {"a66.t23.s16.k1.r0.w1.c3.o0"};
  j["shapes"][0]["heuristic"].erase("list_query_us");
  expect_error(j, "$.shapes[0].heuristic.list_query_us: missing");
}

// The first run's fastest configuration, looked up in the repeat, against the repeat's best.
TEST(GemmOracle, ReproducibilityJudgesTheFirstRunsChoiceOnTheRepeat) {
  const GemmOracle first = parse_gemm_oracle(fixture().dump(), "first.json");  // tile 23 fastest (20.25)
  json again = fixture();
  again["shapes"][0]["candidates"] = json::array({candidate(20, 19.0), candidate(23, 22.0)});
  again["shapes"][0]["heuristic"]["median_us"] = 21.0;
  const GemmOracle repeat = parse_gemm_oracle(again.dump(), "repeat.json");
  const OracleReproducibility r = oracle_reproducibility(first, repeat, "repeat.json");
  EXPECT_EQ(r.all.shapes, 1u);
  EXPECT_DOUBLE_EQ(r.all.geomean, 19.0 / 22.0);
  EXPECT_DOUBLE_EQ(r.all.p5, 19.0 / 22.0);
  EXPECT_EQ(r.longer_kernels.shapes, 1u);  // the repeat's best, 19 us, is not a short kernel
  EXPECT_EQ(r.short_kernels.shapes, 0u);
  EXPECT_EQ(r.configurations, 2u);
  EXPECT_DOUBLE_EQ(r.p90_abs_log_ratio, std::abs(std::log(19.0 / 25.0)) * 0.9 + std::abs(std::log(22.0 / 20.25)) * 0.1);
  // A repeat whose best is the heuristic's own timing is judged against that.
  again["shapes"][0]["heuristic"]["median_us"] = 5.0;
  const OracleReproducibility fast = oracle_reproducibility(first, parse_gemm_oracle(again.dump(), "r"), "r");
  EXPECT_DOUBLE_EQ(fast.all.geomean, 5.0 / 22.0);
  EXPECT_EQ(fast.short_kernels.shapes, 1u);

  json other = again;
  other["gpu"] = "NVIDIA H100";
  EXPECT_THROW(oracle_reproducibility(first, parse_gemm_oracle(other.dump(), "h100.json"), "h100.json"), ConfigError);
  other = again;
  other["shapes"][0]["id"] = "another.shape";
  try {
    (void)oracle_reproducibility(first, parse_gemm_oracle(other.dump(), "other.json"), "other.json");
    ADD_FAILURE() << "records sharing no shape were compared";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("other.json: shares no timed shape"), std::string::npos) << e.what();
  }
}

TEST(GemmOracle, NamesTheFaultyField) {
  json j = fixture();
  j["shapes"][0]["candidates"][1].erase(9);
  expect_error(j, "$.shapes[0].candidates[1]: expected an array of 19 numbers");
  j = fixture();
  j["shapes"][0]["candidates"][0][9] = "fast";
  expect_error(j, "$.shapes[0].candidates[0][9]: expected a number (median_us)");
  j = fixture();
  j["shapes"][0]["heuristic"]["index"] = 0;  // candidate 0 is another configuration
  expect_error(j, "$.shapes[0].heuristic.index");
  j = fixture();
  j["candidate_columns"][0] = "algo";
  expect_error(j, "$.candidate_columns");
  j = fixture();
  j["shapes"][0]["heuristic"].erase("median_us");
  expect_error(j, "$.shapes[0].heuristic.median_us: missing");
  j = fixture();
  j["shapes"][0]["m"] = "4096";
  expect_error(j, "$.shapes[0].m: expected a number");
  j = fixture();
  j["schema"] = 99;
  expect_error(j, "$.schema");
  EXPECT_THROW(parse_gemm_oracle("{not json", "x"), ConfigError);
  EXPECT_THROW(load_gemm_oracle("/nonexistent/dir/oracle.json"), IoError);
}

}  // namespace
}  // namespace hetrec
