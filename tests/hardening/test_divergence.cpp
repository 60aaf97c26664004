// A diverging run fails loudly: the real hetrec program, on the demo config with learning
// rates far too large, stops with the numeric-error exit code, names the step and the
// offending value and the last checkpoint whose state was checked, and never writes a
// checkpoint with non-finite or out-of-bound parameters (docs/reliability.md).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "../cli/cli_test_support.h"
#include "train/checkpoint.h"
#include "train/divergence.h"

#ifdef HETREC_EXE

namespace fs = std::filesystem;
using hetrec::test::run_hetrec;
using hetrec::test::RunResult;
using hetrec::test::scratch_dir;

namespace {

constexpr int kExitNumeric = 5;
constexpr int64_t kDemoBatch = 2048;  // configs/demo.toml train.batch_size
constexpr int kSteps = 20;

// The demo config, short: no evaluation, a checkpoint after every step and of the initial
// state, so that every state the run reaches is offered to the checkpoint writer.
std::string demo_args(const fs::path& dir, const std::string& lr, bool checkpoint_every_step) {
  std::string a = "train --config configs/demo.toml --set train.steps=" + std::to_string(kSteps) +
                  " --set train.progress=off --set train.eval_every=0 --set train.eval_at_end=false"
                  " --set train.threads=2 --set optim.lr=" + lr +
                  " --set train.metrics_path='\"" + (dir / "metrics.jsonl").string() + "\"'" +
                  " --set train.checkpoint_dir='\"" + (dir / "ckpt").string() + "\"'";
  if (checkpoint_every_step) a += " --set train.checkpoint_every=1 --set train.checkpoint_at_start=true";
  return a;
}

// Every element of every floating-point tensor is finite, and every parameter (not an
// optimizer slot) is within the bound; checked here element by element, not through the
// program's own check.
::testing::AssertionResult sound_checkpoint(const std::string& path) {
  for (const hetrec::NamedTensor& nt : hetrec::read_checkpoint_tensors(path)) {
    if (nt.tensor.dtype() != hetrec::DType::f32) continue;  // the demo's state is fp32 (and the i64 step)
    const bool slot = hetrec::is_optimizer_slot(nt.name);
    const float* v = nt.tensor.data<float>();
    for (int64_t i = 0; i < nt.tensor.numel(); ++i)
      if (!std::isfinite(v[i]) || (!slot && std::fabs(v[i]) > hetrec::kParameterBound))
        return ::testing::AssertionFailure() << path << ": " << nt.name << "[" << i << "] = " << v[i];
  }
  return ::testing::AssertionSuccess();
}

struct Stop {
  int64_t step = -1;            // the step the message names
  int64_t first = -1, last = -1;  // the samples it names, when it names them
  std::string good;             // the last checkpoint it names as checked, "" when none
};

// Reads the message: "step N (samples a..b of the training data): ..." or "after step N: ...",
// then "The last checkpoint of a state checked finite and within bounds is <path>."
Stop parse_stop(const std::string& err) {
  Stop s;
  std::smatch m;
  if (std::regex_search(err, m, std::regex(R"(step (\d+) \(samples (\d+)\.\.(\d+) of the training data\): )"))) {
    s.step = std::stoll(m[1]);
    s.first = std::stoll(m[2]);
    s.last = std::stoll(m[3]);
  } else if (std::regex_search(err, m, std::regex(R"(after step (\d+): )"))) {
    s.step = std::stoll(m[1]);
  }
  if (std::regex_search(err, m, std::regex(R"(The last checkpoint of a state checked finite and within bounds is (\S+)\.$)")))
    s.good = m[1];
  return s;
}

// The program's error line ("hetrec: numeric error: ..."), without the log before it.
std::string error_line(const std::string& err) {
  const std::size_t at = err.find("numeric error: ");
  if (at == std::string::npos) return {};
  return err.substr(at, err.find('\n', at) - at);
}

// What every stop message must hold, whatever the learning rate.
void expect_a_clear_stop(const RunResult& r, const fs::path& dir) {
  EXPECT_EQ(r.code, kExitNumeric) << r.err;
  const std::string msg = error_line(r.err);
  ASSERT_FALSE(msg.empty()) << r.err;
  EXPECT_NE(msg.find("Training diverged: lower optim.lr"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("intact"), std::string::npos) << "no checkpoint is called intact: " << msg;
  // Punctuation: every sentence ends before the next starts.
  EXPECT_FALSE(std::regex_search(msg, std::regex(R"([^.] (The last checkpoint|No checkpoint|Training diverged))")))
      << msg;
  EXPECT_FALSE(std::regex_search(msg, std::regex(R"(\.\.[^0-9]|\. +\.|; *\.)"))) << msg;  // ".." only in ranges
  // The offending value: a loss or a parameter, with its number.
  EXPECT_TRUE(std::regex_search(msg, std::regex(R"(the loss is (-?nan|NaN|-?inf|[0-9.e+-]+)|parameter '[^']+' element \d+ is )")))
      << msg;
  const Stop s = parse_stop(msg);
  EXPECT_GE(s.step, 1) << r.err;
  EXPECT_LE(s.step, kSteps) << r.err;
  if (s.first >= 0) {  // step N trains samples (N-1)B .. NB-1: steps count from 1
    EXPECT_EQ(s.first, (s.step - 1) * kDemoBatch) << r.err;
    EXPECT_EQ(s.last, s.step * kDemoBatch - 1) << r.err;
  }
  // No checkpoint on disk holds a diverged state, and the one named is on disk.
  const auto all = hetrec::list_checkpoints((dir / "ckpt").string());
  for (const std::string& path : all) EXPECT_TRUE(sound_checkpoint(path));
  if (!s.good.empty()) {
    EXPECT_TRUE(fs::exists(s.good)) << r.err;
    EXPECT_TRUE(sound_checkpoint(s.good));
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(s.good, all.front()) << "the newest checkpoint is the one named";
  }
}

}  // namespace

// optim.lr = 100, 1e4 and 1e6 (the demo trains at 0.02): each stops within the 20 steps,
// never writing the diverged state; the checkpoint named is the newest, and sound.
TEST(Divergence, LargeLearningRatesStopWithTheStepTheValueAndASoundCheckpoint) {
  for (const std::string lr : {"100", "1e4", "1e6"}) {
    SCOPED_TRACE("optim.lr=" + lr);
    const fs::path dir = scratch_dir("divergence_" + lr);
    const RunResult r = run_hetrec(demo_args(dir, lr, true), dir);
    expect_a_clear_stop(r, dir);
    const Stop s = parse_stop(error_line(r.err));
    // A checkpoint of the initial state is written before any step, so one is named.
    EXPECT_FALSE(s.good.empty()) << r.err;
    std::printf("optim.lr=%s: %s\n", lr.c_str(), error_line(r.err).c_str());
    fs::remove_all(dir);
  }
}

// optim.lr = 1e6 without periodic checkpoints: the first step's update sends the weights to
// about 1e6 and the second step's loss is NaN; the message names step 2 (samples 2048 to
// 4095, the second batch) and says no checkpoint has been written.
TEST(Divergence, NanLossNamesTheStepItsSamplesAndThatNoCheckpointExists) {
  const fs::path dir = scratch_dir("divergence_nan");
  const RunResult r = run_hetrec(demo_args(dir, "1e6", false), dir);
  expect_a_clear_stop(r, dir);
  const Stop s = parse_stop(error_line(r.err));
  EXPECT_EQ(s.step, 2) << r.err;
  EXPECT_EQ(s.first, kDemoBatch) << r.err;
  EXPECT_NE(r.err.find("No checkpoint of this run has been written."), std::string::npos) << r.err;
  EXPECT_TRUE(hetrec::list_checkpoints((dir / "ckpt").string()).empty());
  fs::remove_all(dir);
}

// A checkpoint that holds a diverged state (written by a run that did not check, or
// damaged in a way its checksum cannot see because it was sealed after) is refused on
// resume, named, and never called intact.
TEST(Divergence, ResumeRefusesACheckpointOfADivergedState) {
  const fs::path dir = scratch_dir("divergence_resume");
  const std::string ckpt = (dir / "ckpt").string();
  RunResult r = run_hetrec(demo_args(dir, "0.02", false) + " --set train.steps=3", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string good = hetrec::checkpoint_path(ckpt, 3);
  ASSERT_TRUE(sound_checkpoint(good));
  // The same state, one weight 1e6, sealed as the checkpoint of step 4.
  hetrec::CheckpointMeta meta;
  std::vector<hetrec::NamedTensor> state = hetrec::read_checkpoint_tensors(good, &meta);
  ASSERT_EQ(state.front().tensor.dtype(), hetrec::DType::f32);
  state.front().tensor.data<float>()[0] = 1e6f;
  meta.step = 4;
  const std::string poisoned = hetrec::checkpoint_path(ckpt, 4);
  hetrec::save_checkpoint(poisoned, meta, state);
  r = run_hetrec(demo_args(dir, "0.02", false) + " --set train.resume=true", dir);
  EXPECT_EQ(r.code, kExitNumeric) << r.err;
  EXPECT_NE(r.err.find("checkpoint '" + poisoned + "' (step 4) holds parameter '" + state.front().name +
                       "' element 0 is 1e+06, beyond +-10000"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("intact"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

#else

TEST(Divergence, LargeLearningRatesStopWithTheStepTheValueAndASoundCheckpoint) {
  GTEST_SKIP() << "the hetrec program is not built";
}

#endif
