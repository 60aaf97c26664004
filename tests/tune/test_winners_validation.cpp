// winners.json is validated on load before any entry is used: the schema (every key and
// its type, nothing unknown), the validators' form (compute capability, driver, source
// hash), the bounds (every parameter within its kernel family's variant space, times
// finite), a model-rewritten header checked as a fresh reply, one entry per key, the
// file's size. Each bad file is a ConfigError naming the file, the entry and the key;
// the committed tune/winners.json passes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tune/winners.h"

namespace hetrec::tune {
namespace {

class WinnersValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("hetrec_winners_validation_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "winners.json").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static nlohmann::json entry() {
    return {{"kernel", "embedding_bag_forward"},
            {"shape", "rows=bf16 out=fp32 dim=128"},
            {"gpu", "NVIDIA H200"},
            {"compute_capability", "9.0"},
            {"driver_version", 13000},
            {"source_hash", "a609317c95f50a64"},
            {"params", {{"block_threads", 64}, {"ids_in_flight", 1}, {"lanes", 8}, {"vec_bytes", 16}}},
            {"time_us", 1886.3},
            {"default_us", 2805.1},
            {"floor_us", 1204.7},
            {"workload", "26 tables"}};
  }
  static nlohmann::json file_of(const nlohmann::json& e) {
    return {{"schema_version", 1}, {"winners", nlohmann::json::array({e})}};
  }
  void write(const std::string& text) const { std::ofstream(path_, std::ios::trunc) << text; }

  // The ConfigError's message for a file holding `text`; fails the test when it loads.
  std::string rejection(const std::string& text) const {
    write(text);
    try {
      WinnersStore::load(path_);
    } catch (const ConfigError& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected a ConfigError for " << text.substr(0, 300);
    return "";
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(WinnersValidation, TheCommittedWinnersFileAndAValidEntryLoad) {
  const WinnersStore committed = WinnersStore::load(std::string(HETREC_SOURCE_DIR) + "/tune/winners.json");
  EXPECT_GE(committed.winners().size(), 10u);
  write(file_of(entry()).dump());
  const WinnersStore store = WinnersStore::load(path_);
  ASSERT_EQ(store.winners().size(), 1u);
  EXPECT_EQ(store.winners()[0].params.at("lanes"), 8);
  nlohmann::json small = entry();
  small["kernel"] = "small_gemm";
  small["shape"] = "reduce narrow=13 wide=512 C=wide^T*narrow fp32";
  small["source_hash"] = "0123456789abcdef";
  small["params"] = {{"vec", 4}, {"lanes", 1}, {"rows_per_block", 2}, {"unroll", 2}, {"split", 256}};
  small["kernel_header"] = "#include <cstdint>\n#include \"gpu/platform.h\"\n// rewritten\n";
  write(file_of(small).dump());
  EXPECT_EQ(WinnersStore::load(path_).winners().at(0).params.at("split"), 256);
}

TEST_F(WinnersValidation, SchemaEveryKeyAndType) {
  struct Case {
    std::string name;
    std::function<void(nlohmann::json&)> change;
    std::string expect;  // in the message, after "<file>: winners[0]"
  };
  const std::vector<Case> cases = {
      {"unknown key", [](nlohmann::json& e) { e["speedup"] = 2; }, "unknown key 'speedup'"},
      {"kernel missing", [](nlohmann::json& e) { e.erase("kernel"); }, "missing key 'kernel'"},
      {"shape missing", [](nlohmann::json& e) { e.erase("shape"); }, "missing key 'shape'"},
      {"gpu missing", [](nlohmann::json& e) { e.erase("gpu"); }, "missing key 'gpu'"},
      {"params missing", [](nlohmann::json& e) { e.erase("params"); }, "missing key 'params'"},
      {"time missing", [](nlohmann::json& e) { e.erase("time_us"); }, "missing key 'time_us'"},
      {"default missing", [](nlohmann::json& e) { e.erase("default_us"); }, "missing key 'default_us'"},
      {"floor missing", [](nlohmann::json& e) { e.erase("floor_us"); }, "missing key 'floor_us'"},
      {"hash missing", [](nlohmann::json& e) { e.erase("source_hash"); }, "missing key 'source_hash'"},
      {"kernel a number", [](nlohmann::json& e) { e["kernel"] = 7; }, "'kernel' must be a string"},
      {"gpu empty", [](nlohmann::json& e) { e["gpu"] = ""; }, "'gpu' must not be empty"},
      {"driver a string", [](nlohmann::json& e) { e["driver_version"] = "13000"; }, "driver_version"},
      {"driver a float", [](nlohmann::json& e) { e["driver_version"] = 13000.5; }, "driver_version"},
      {"time a string", [](nlohmann::json& e) { e["time_us"] = "fast"; }, "'time_us' must be a number"},
      {"params a list", [](nlohmann::json& e) { e["params"] = {64, 1, 8, 16}; }, "expected an object"},
      {"workload a number", [](nlohmann::json& e) { e["workload"] = 1; }, "'workload' must be a string"},
      {"header a number", [](nlohmann::json& e) { e["kernel_header"] = 1; }, "'kernel_header' must be a string"},
  };
  for (const Case& c : cases) {
    nlohmann::json e = entry();
    c.change(e);
    const std::string what = rejection(file_of(e).dump());
    EXPECT_NE(what.find(path_ + ": winners[0]"), std::string::npos) << c.name << ": " << what;
    EXPECT_NE(what.find(c.expect), std::string::npos) << c.name << ": " << what;
  }
  // The file's own structure.
  EXPECT_NE(rejection("[1, 2]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(rejection(R"({"schema_version": 1, "winners": [], "extra": 1})").find("unknown key 'extra'"),
            std::string::npos);
  EXPECT_NE(rejection(R"({"winners": []})").find("schema_version missing"), std::string::npos);
  EXPECT_NE(rejection(R"({"schema_version": "1", "winners": []})").find("schema_version"), std::string::npos);
  EXPECT_NE(rejection(R"({"schema_version": 1, "winners": {}})").find("array 'winners'"), std::string::npos);
  EXPECT_NE(rejection(R"({"schema_version": 1, "winners": [7]})").find("winners[0]: expected an object"),
            std::string::npos);
  EXPECT_NE(rejection("{\"schema_version\": 1, \"winners\": [").find("not valid JSON"), std::string::npos);
}

TEST_F(WinnersValidation, ValidatorsAndHashesHaveTheirForm) {
  for (const char* hash : {"a609317c95f50a6", "a609317c95f50a640", "A609317C95F50A64", "a609317c95f50a6g", "00ff"}) {
    nlohmann::json e = entry();
    e["source_hash"] = hash;
    const std::string what = rejection(file_of(e).dump());
    EXPECT_NE(what.find("source_hash '" + std::string(hash) + "' is not 16 lowercase hex digits"), std::string::npos)
        << what;
  }
  for (const char* cc : {"9", "nine", "9.", ".0", "123.0", "9.0.1"}) {
    nlohmann::json e = entry();
    e["compute_capability"] = cc;
    EXPECT_NE(rejection(file_of(e).dump()).find("is not major.minor"), std::string::npos) << cc;
  }
  for (const nlohmann::json& driver : {nlohmann::json(0), nlohmann::json(-1), nlohmann::json(int64_t{1} << 40)}) {
    nlohmann::json e = entry();
    e["driver_version"] = driver;
    EXPECT_NE(rejection(file_of(e).dump()).find("'driver_version' must be a positive integer"), std::string::npos)
        << driver;
  }
}

TEST_F(WinnersValidation, ParametersLieInTheKernelFamilysVariantSpace) {
  struct Case {
    std::string name;
    std::function<void(nlohmann::json&)> change;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"value outside", [](nlohmann::json& e) { e["params"]["lanes"] = 3; }, "'lanes' = 3 is outside"},
      {"wraps to a legal value", [](nlohmann::json& e) { e["params"]["lanes"] = (int64_t{1} << 32) + 8; },
       "'lanes' = 4294967304 is outside"},
      {"negative", [](nlohmann::json& e) { e["params"]["block_threads"] = -64; }, "'block_threads' = -64"},
      {"not an integer", [](nlohmann::json& e) { e["params"]["vec_bytes"] = 16.0; }, "'vec_bytes' = 16.0"},
      {"unknown parameter", [](nlohmann::json& e) { e["params"]["unroll"] = 2; }, "'unroll' is not one of"},
      {"missing parameter", [](nlohmann::json& e) { e["params"].erase("ids_in_flight"); },
       "missing parameter 'ids_in_flight'"},
      {"another family's", [](nlohmann::json& e) { e["kernel"] = "dot_interaction_forward"; }, "is not one of"},
      {"unknown kernel", [](nlohmann::json& e) { e["kernel"] = "my_kernel"; }, "unknown kernel 'my_kernel'"},
      {"small gemm of no kind",
       [](nlohmann::json& e) {
         e["kernel"] = "small_gemm";
         e["shape"] = "sideways k=1";
       },
       "does not start with rows, outer or reduce"},
      {"small gemm of another kind",
       [](nlohmann::json& e) {
         e["kernel"] = "small_gemm";
         e["shape"] = "rows n=1 k=256 B^T fp32 bias";
         e["params"] = {{"vec", 4}, {"lanes", 8}, {"rows_per_block", 8}, {"unroll", 2}, {"split", 256}};  // reduce's
       },
       "'split' = 256 is outside"},
      {"time zero", [](nlohmann::json& e) { e["time_us"] = 0; }, "'time_us' = 0 is outside"},
      {"time negative", [](nlohmann::json& e) { e["default_us"] = -1.0; }, "'default_us' = -1.0 is outside"},
      {"time huge", [](nlohmann::json& e) { e["floor_us"] = 1e300; }, "'floor_us' = 1e+300 is outside"},
      {"header includes a file",
       [](nlohmann::json& e) { e["kernel_header"] = "#include \"/etc/passwd\"\n__global__ void k() {}\n"; },
       "kernel_header: model proposer: line 1"},
      {"header empty", [](nlohmann::json& e) { e["kernel_header"] = ""; }, "'kernel_header' must not be empty"},
  };
  for (const Case& c : cases) {
    nlohmann::json e = entry();
    c.change(e);
    const std::string what = rejection(file_of(e).dump());
    EXPECT_NE(what.find(path_ + ": winners[0]"), std::string::npos) << c.name << ": " << what;
    EXPECT_NE(what.find(c.expect), std::string::npos) << c.name << ": " << what;
  }
}

TEST_F(WinnersValidation, OneEntryPerKeyAndABoundedSize) {
  nlohmann::json f = file_of(entry());
  nlohmann::json second = entry();
  second["time_us"] = 1000.0;
  f["winners"].push_back(second);
  EXPECT_NE(rejection(f.dump()).find("winners[1]: a second winner for embedding_bag_forward"), std::string::npos);
  // Past 16 MiB the file is refused before it is parsed.
  nlohmann::json big = entry();
  big["workload"] = std::string((std::size_t{16} << 20) + 1, 'w');
  EXPECT_NE(rejection(file_of(big).dump()).find("larger than 16777216 bytes"), std::string::npos);
}

}  // namespace
}  // namespace hetrec::tune
