// The metrics file starts each run with a header (run id, UTC time, commit, version, the
// resolved config), and a new run does not mix into a file that holds another run: it is
// refused with the config-error exit code, unless it resumes from a checkpoint the file
// records, which appends a header naming that checkpoint. Through the real program.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <vector>

#include "cli_test_support.h"

using namespace hetrec::test;
namespace fs = std::filesystem;

namespace {

constexpr int kExitConfig = 2;

std::vector<nlohmann::json> records(const fs::path& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::vector<nlohmann::json> headers(const fs::path& path) {
  std::vector<nlohmann::json> out;
  for (const auto& r : records(path))
    if (r["type"] == "run") out.push_back(r);
  return out;
}

// A short demo run: 4 steps (or `steps`), no evaluation, a checkpoint at its end.
std::string demo(const fs::path& metrics, const fs::path& ckpt, int steps, const std::string& extra = "") {
  return "train --config configs/demo.toml --set train.steps=" + std::to_string(steps) +
         " --set train.progress=off --set train.log_level=warn --set train.eval_at_end=false --set train.threads=2"
         " --set train.log_every=2 --set \"train.metrics_path='" + metrics.string() + "'\"" +
         " --set \"train.checkpoint_dir='" + ckpt.string() + "'\" " + extra;
}

std::string commit_of_program(const fs::path& dir) {
  const RunResult v = run_hetrec("--version", dir);
  std::smatch m;
  const std::regex commit("\ncommit: ([^\n]+)\n");
  return std::regex_search(v.out, m, commit) ? m[1].str() : "";
}

}  // namespace

TEST(MetricsHeader, FirstRecordNamesTheRunTheBuildAndEveryResolvedKey) {
  const auto dir = scratch_dir("metrics_header");
  const fs::path metrics = dir / "m.jsonl";
  std::ofstream(dir / "recipe.toml") << "[recipe]\nbatch_size = 1024\n";
  const RunResult r = run_hetrec(demo(metrics, dir / "ckpt", 4, "--set optim.lr=0.03 --recipe '" +
                                                                    (dir / "recipe.toml").string() + "'"),
                                 dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto all = records(metrics);
  ASSERT_FALSE(all.empty());
  const nlohmann::json& h = all.front();
  EXPECT_EQ(h["type"], "run");
  EXPECT_TRUE(std::regex_match(h["run_id"].get<std::string>(), std::regex("[0-9a-f]{16}"))) << h.dump();
  EXPECT_TRUE(std::regex_match(h["utc"].get<std::string>(), std::regex("20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-9:]{8}Z")))
      << h.dump();
  EXPECT_EQ(h["commit"], commit_of_program(dir));
  EXPECT_NE(h["commit"], "unknown");  // the program knows its build
  EXPECT_TRUE(std::regex_match(h["version"].get<std::string>(), std::regex("[0-9]+\\.[0-9]+\\.[0-9]+")));
  EXPECT_EQ(h["start_step"], 0);
  EXPECT_FALSE(h.contains("resumed_from"));
  const nlohmann::json& c = h["config"];
  EXPECT_EQ(c["optim"]["lr"], 0.03);              // --set
  EXPECT_EQ(c["optim"]["sparse_lr"], 0.1);        // the file
  EXPECT_EQ(c["train"]["batch_size"], 1024);      // the recipe
  EXPECT_EQ(c["train"]["steps"], 4);
  EXPECT_EQ(c["train"]["eval_batch_size"], 16384);  // the file
  EXPECT_EQ(c["train"]["keep_checkpoints"], 3);     // a default
  EXPECT_EQ(c["model"]["row_dtype"], "fp32");
  EXPECT_EQ(c["model"]["tables"].size(), 8u);
  EXPECT_EQ(c["model"]["tables"][3]["rows"], 5000);
  EXPECT_EQ(c["data"]["synthetic"]["seed"], 7);
  for (const char* section : {"model", "optim", "data", "train", "recipe"}) EXPECT_TRUE(c.contains(section)) << section;
  // Only one header: the rest are the run's own records.
  EXPECT_EQ(headers(metrics).size(), 1u);
  fs::remove_all(dir);
}

TEST(MetricsHeader, ANewRunIntoAFileOfAnotherRunIsRefusedAndTheFileIsUntouched) {
  const auto dir = scratch_dir("metrics_refuse");
  const fs::path metrics = dir / "m.jsonl";
  ASSERT_EQ(run_hetrec(demo(metrics, dir / "ckpt", 2), dir).code, 0);
  const std::string before = slurp(metrics);
  const std::string run_id = records(metrics).front()["run_id"];
  // Without resume, into another checkpoint directory or the same one.
  for (const char* ckpt : {"ckpt2", "ckpt"}) {
    const RunResult r = run_hetrec(demo(metrics, dir / ckpt, 2), dir);
    EXPECT_EQ(r.code, kExitConfig) << r.err;
    EXPECT_NE(r.err.find("train.metrics_path '" + metrics.string() + "': already holds the records of run " + run_id),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("--set train.metrics_path=<new path>"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--set train.resume=true"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(metrics), before);
  }
  // Resuming, but with no checkpoint to resume from: it would be a new run.
  RunResult r = run_hetrec(demo(metrics, dir / "empty", 2, "--set train.resume=true"), dir);
  EXPECT_EQ(r.code, kExitConfig) << r.err;
  EXPECT_NE(r.err.find("found no checkpoint to resume from"), std::string::npos) << r.err;
  // Resuming from the checkpoint of another run (it logged to another file).
  ASSERT_EQ(run_hetrec(demo(dir / "other.jsonl", dir / "other", 2), dir).code, 0);
  r = run_hetrec(demo(metrics, dir / "other", 4, "--set train.resume=true"), dir);
  EXPECT_EQ(r.code, kExitConfig) << r.err;
  EXPECT_NE(r.err.find("is not one the file records, so it belongs to another run"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(metrics), before);
  fs::remove_all(dir);
}

TEST(MetricsHeader, AResumedRunAppendsAHeaderNamingItsCheckpoint) {
  const auto dir = scratch_dir("metrics_resume");
  const fs::path metrics = dir / "m.jsonl";
  ASSERT_EQ(run_hetrec(demo(metrics, dir / "ckpt", 4), dir).code, 0);
  const RunResult r = run_hetrec(demo(metrics, dir / "ckpt", 8, "--set train.resume=true"), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto h = headers(metrics);
  ASSERT_EQ(h.size(), 2u) << slurp(metrics);
  EXPECT_EQ(h[1]["run_id"], h[0]["run_id"]);  // one run in two parts
  EXPECT_EQ(h[1]["resumed_from"], (dir / "ckpt" / "ckpt-000000000004.hck").string());
  EXPECT_EQ(h[1]["start_step"], 4);
  EXPECT_EQ(h[1]["config"]["train"]["steps"], 8);
  EXPECT_EQ(h[1]["config"]["train"]["resume"], true);
  // The second part's train records continue from step 4.
  const auto all = records(metrics);
  int64_t last_train_step = 0;
  for (const auto& rec : all)
    if (rec["type"] == "train") last_train_step = rec["step"];
  EXPECT_EQ(last_train_step, 8);
  fs::remove_all(dir);
}
