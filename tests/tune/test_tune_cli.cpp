// `hetrec tune` checks its configuration before any device work, so these run on any
// machine with a GPU build: a bearer key for a plain-http endpoint that is not a
// loopback address is refused (exit 2) naming the URL and the rule, and a winners file
// that fails validation is refused (exit 2) naming the file, the entry and the key.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "../cli/cli_test_support.h"

namespace hetrec::test {
namespace {

constexpr int kExitConfig = 2;  // src/cli/main.cpp

class TuneCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = scratch_dir(std::string("tune_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (const char* v : {"HETREC_TUNE_LLM_URL", "HETREC_TUNE_LLM_MODEL", "HETREC_TUNE_LLM_KEY", "HETREC_TUNE_LLM_CA_FILE"})
      ::unsetenv(v);
  }
  void TearDown() override {
    for (const char* v : {"HETREC_TUNE_LLM_URL", "HETREC_TUNE_LLM_MODEL", "HETREC_TUNE_LLM_KEY"}) ::unsetenv(v);
    std::filesystem::remove_all(dir_);
  }
  RunResult tune(const std::string& winners) {
    return run_hetrec("tune --kernel embedding_bag_forward --budget 0.01 --out-dir '" + (dir_ / "out").string() +
                          "' --winners '" + winners + "' --hw h200_sxm --config configs/dlrm_dcnv2_capped.toml",
                      dir_);
  }
  std::filesystem::path dir_;
};

TEST_F(TuneCli, AKeyOverPlainHttpToARemoteHostIsRefused) {
  ::setenv("HETREC_TUNE_LLM_URL", "http://192.0.2.1:8000/v1/chat/completions", 1);  // TEST-NET-1: never contacted
  ::setenv("HETREC_TUNE_LLM_MODEL", "kernel-model", 1);
  ::setenv("HETREC_TUNE_LLM_KEY", "sk-must-not-leak", 1);
  const RunResult r = tune((dir_ / "winners.json").string());
  EXPECT_EQ(r.code, kExitConfig) << r.err;
  EXPECT_NE(r.err.find("http://192.0.2.1:8000/v1/chat/completions"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("loopback"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("sk-must-not-leak"), std::string::npos) << r.err;  // the key is never printed
}

TEST_F(TuneCli, AWinnersFileOutsideTheVariantSpaceIsRefused) {
  const std::string winners = (dir_ / "winners.json").string();
  std::ofstream(winners) << R"({"schema_version": 1, "winners": [{"kernel": "embedding_bag_forward",
      "shape": "rows=fp32 out=fp32 dim=128", "gpu": "NVIDIA H200", "compute_capability": "9.0",
      "driver_version": 13000, "source_hash": "a609317c95f50a64",
      "params": {"block_threads": 64, "ids_in_flight": 1, "lanes": 3, "vec_bytes": 16},
      "time_us": 10.0, "default_us": 20.0, "floor_us": 5.0, "workload": "test"}]})";
  const RunResult r = tune(winners);
  EXPECT_EQ(r.code, kExitConfig) << r.err;
  EXPECT_NE(r.err.find(winners + ": winners[0].params"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'lanes' = 3"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hetrec::test
