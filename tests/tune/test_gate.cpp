// The gate's bookkeeping without a device: every attempt reaches the attempt log, only a
// passed one can reach the winners store, and stored winners round-trip through the file
// with their validator fields.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "core/error.h"
#include "tune/gate.h"

namespace hetrec::tune {
namespace {

class GateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("hetrec_tune_gate_" + std::to_string(::getpid()) + "_" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ctx_.key = {"embedding_bag_forward", "rows=f32 out=f32 dim=128", "NVIDIA H200", "9.0", 13000, "00ff00ff00ff00ff"};
    ctx_.default_us = 100.0;
    ctx_.floor_us = 50.0;
    ctx_.workload = "test";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Attempt attempt(Verdict v, double time_us, int lanes) const {
    Attempt a;
    a.kernel = ctx_.key.kernel;
    a.shape = ctx_.key.shape;
    a.origin = "space";
    a.params = {{"lanes", lanes}};
    a.verdict = v;
    a.compiled = v != Verdict::pruned && v != Verdict::compile_error;
    a.time_us = time_us;
    a.source_hash = ctx_.key.source_hash;
    if (v != Verdict::passed) a.reason = "rejected for the test";
    return a;
  }

  std::vector<nlohmann::json> log_lines(const std::string& path) const {
    std::ifstream f(path);
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(f, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }

  std::filesystem::path dir_;
  GateContext ctx_;
};

TEST_F(GateTest, RejectedAttemptsAreLoggedAndNeverStored) {
  AttemptLog log((dir_ / "attempts.jsonl").string());
  WinnersStore store;
  Gate gate(log, store);
  // A wrong candidate that was (wrongly) fast: its time must not matter.
  Attempt wrong = attempt(Verdict::wrong, 1.0, 8);
  wrong.max_abs_error = 0.5;
  EXPECT_FALSE(gate.record(wrong, ctx_));
  EXPECT_FALSE(gate.record(attempt(Verdict::compile_error, 0.0, 16), ctx_));
  EXPECT_FALSE(gate.record(attempt(Verdict::resources, 0.0, 32), ctx_));
  EXPECT_FALSE(gate.record(attempt(Verdict::launch_error, 0.0, 4), ctx_));
  EXPECT_FALSE(gate.record(attempt(Verdict::pruned, 0.0, 2), ctx_));
  EXPECT_TRUE(store.winners().empty());

  EXPECT_FALSE(gate.record(attempt(Verdict::passed, 120.0, 64), ctx_));  // slower than the built-in (100 us)
  EXPECT_TRUE(store.winners().empty());
  EXPECT_TRUE(gate.record(attempt(Verdict::passed, 90.0, 32), ctx_));
  EXPECT_FALSE(gate.record(attempt(Verdict::passed, 95.0, 16), ctx_));  // slower: kept out
  EXPECT_FALSE(gate.record(attempt(Verdict::wrong, 10.0, 8), ctx_));   // faster but wrong
  EXPECT_TRUE(gate.record(attempt(Verdict::passed, 80.0, 8), ctx_));
  ASSERT_EQ(store.winners().size(), 1u);
  EXPECT_EQ(store.winners()[0].params.at("lanes"), 8);
  EXPECT_DOUBLE_EQ(store.winners()[0].time_us, 80.0);

  const auto lines = log_lines(log.path());
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines[0]["verdict"], "wrong");
  EXPECT_EQ(lines[0]["max_abs_error"], 0.5);
  EXPECT_FALSE(lines[0].contains("time_us"));
  EXPECT_EQ(lines[1]["verdict"], "compile_error");
  EXPECT_EQ(lines[5]["verdict"], "passed");
  EXPECT_EQ(lines[5]["time_us"], 120.0);
  EXPECT_EQ(lines[6]["time_us"], 90.0);
}

TEST_F(GateTest, PassedWithoutTimingOrForAnotherKernelIsAnInternalError) {
  AttemptLog log((dir_ / "attempts.jsonl").string());
  WinnersStore store;
  Gate gate(log, store);
  EXPECT_THROW(gate.record(attempt(Verdict::passed, 0.0, 8), ctx_), InternalError);
  Attempt other = attempt(Verdict::passed, 10.0, 8);
  other.source_hash = "another";
  EXPECT_THROW(gate.record(other, ctx_), InternalError);
  EXPECT_TRUE(store.winners().empty());
}

TEST_F(GateTest, AModelCandidateIsKeptOnlyAfterEveryVerificationSetPassed) {
  AttemptLog log((dir_ / "attempts.jsonl").string());
  WinnersStore store;
  Gate gate(log, store);
  Attempt a = attempt(Verdict::passed, 60.0, 8);
  a.origin = "model";
  GateContext model = ctx_;
  model.kernel_header = "// a rewritten kernel\n";
  model.sets_required = 6;
  model.sets_passed = 5;  // one input set failed
  EXPECT_FALSE(gate.record(a, model));
  model.sets_required = 0;  // never verified on any set
  model.sets_passed = 0;
  EXPECT_FALSE(gate.record(a, model));
  EXPECT_TRUE(store.winners().empty());
  model.sets_required = 6;
  model.sets_passed = 6;
  EXPECT_TRUE(gate.record(a, model));
  ASSERT_EQ(store.winners().size(), 1u);
  EXPECT_EQ(store.winners()[0].kernel_header, "// a rewritten kernel\n");
  // A variant of the built-in source needs no sets (it is the engine's own source).
  EXPECT_TRUE(gate.record(attempt(Verdict::passed, 50.0, 16), ctx_));
  EXPECT_EQ(log_lines(log.path()).size(), 4u);  // every attempt logged
}

TEST_F(GateTest, WinnersRoundTripAndStaleOnesAreNotFound) {
  WinnersStore store;
  Winner w;
  w.key = ctx_.key;
  w.params = {{"vec_bytes", 16}, {"lanes", 32}, {"ids_in_flight", 8}, {"block_threads", 128}};
  w.time_us = 70.5;
  w.default_us = 100.0;
  w.floor_us = 50.0;
  w.workload = "26 tables";
  w.kernel_header = "// rewritten\n";
  ASSERT_TRUE(store.offer(w));
  const std::string path = (dir_ / "sub_winners.json").string();
  store.save(path);
  const WinnersStore loaded = WinnersStore::load(path);
  const auto found = loaded.find(ctx_.key);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->params, w.params);
  EXPECT_DOUBLE_EQ(found->time_us, 70.5);
  EXPECT_EQ(found->kernel_header, "// rewritten\n");

  // Another driver, GPU or source: not found, and listed as stale.
  for (auto change : {+[](WinnerKey& k) { k.driver_version = 12080; }, +[](WinnerKey& k) { k.gpu = "NVIDIA H100"; },
                      +[](WinnerKey& k) { k.source_hash = "1234"; }, +[](WinnerKey& k) { k.compute_capability = "10.0"; }}) {
    WinnerKey k = ctx_.key;
    change(k);
    EXPECT_FALSE(loaded.find(k).has_value());
    EXPECT_EQ(loaded.stale(k).size(), 1u);
  }
  WinnerKey other_shape = ctx_.key;
  other_shape.shape = "rows=bf16 out=f32 dim=128";
  EXPECT_TRUE(loaded.stale(other_shape).empty());
}

TEST_F(GateTest, MissingFileIsEmptyMalformedFileNamesTheEntry) {
  EXPECT_TRUE(WinnersStore::load((dir_ / "absent.json").string()).winners().empty());
  const std::string path = (dir_ / "bad.json").string();
  std::ofstream(path) << R"({"schema_version": 1, "winners": [{"kernel": "k", "shape": "s", "gpu": "g",
      "compute_capability": "9.0", "driver_version": "new", "source_hash": "h", "params": {},
      "time_us": 1, "default_us": 1, "floor_us": 1}]})";
  try {
    WinnersStore::load(path);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("winners[0]"), std::string::npos) << what;
    EXPECT_NE(what.find("driver_version"), std::string::npos) << what;
  }
  std::ofstream(path) << "{not json";
  EXPECT_THROW(WinnersStore::load(path), ConfigError);
  std::ofstream(path) << R"({"schema_version": 2, "winners": []})";
  EXPECT_THROW(WinnersStore::load(path), ConfigError);
}

}  // namespace
}  // namespace hetrec::tune
