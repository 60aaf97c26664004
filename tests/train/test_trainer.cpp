#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/trainer.h"

using namespace hetrec;
namespace fs = std::filesystem;

namespace {

// A small model and dataset so each run takes well under a second.
const char* kSmall = R"(
[model]
arch = "ARCH"
embedding_dim = 8
table_rows = [500, 3000, 50]
table_hotness = [1, 3, 2]
variable_bags = true
bottom_mlp = [16, 8]
top_mlp = [16, 1]
cross_layers = 2
cross_rank = 4
row_dtype = "ROWS"

[optim]
dense = "DENSE"
sparse = "SPARSE"
lr = 0.05
warmup_steps = 4
decay_start = 20
decay_steps = 30

[data.synthetic]
train_samples = 6000
eval_samples = 2000
seed = 3

[train]
batch_size = 256
steps = 37
log_every = 5
progress = "off"
log_level = "warn"
threads = 2
)";

std::string small_config(const std::string& arch, const std::string& dense, const std::string& sparse,
                         const std::string& rows = "fp32") {
  std::string s = kSmall;
  for (auto [key, value] : {std::pair<std::string, std::string>{"ARCH", arch}, {"DENSE", dense}, {"SPARSE", sparse}, {"ROWS", rows}})
    s.replace(s.find(key), key.size(), value);
  return s;
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("hetrec_trainer_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TrainSummary train_run(const std::string& text, const std::vector<std::string>& overrides) {
  Logger quiet(LogLevel::warn);
  Trainer t(parse_run_config(text, "test.toml", overrides), quiet);
  return t.run();
}

}  // namespace

// k steps + checkpoint + resume + (N - k) steps == N straight steps, bit for bit: the
// final checkpoint files are identical. Covers both architectures, every optimizer, a
// pass over the end of the data (epoch wrap: 37 steps x 256 > 6000 samples), the
// learning-rate schedule and 16-bit rows with stochastic rounding.
TEST(Trainer, ResumeIsBitwiseExact) {
  struct Case {
    const char *arch, *dense, *sparse, *rows;
  };
  for (const Case& c : {Case{"dlrm", "adagrad", "rowwise_adagrad", "fp32"}, Case{"dcnv2", "adam", "adagrad", "bf16"},
                        Case{"dlrm", "sgd", "sgd", "fp16"}}) {
    SCOPED_TRACE(std::string(c.arch) + "/" + c.dense + "/" + c.sparse + "/" + c.rows);
    const std::string text = small_config(c.arch, c.dense, c.sparse, c.rows);
    const auto straight = fresh_dir("straight");
    const auto resumed = fresh_dir("resumed");
    train_run(text, {"train.checkpoint_dir=\"" + straight.string() + "\""});
    train_run(text, {"train.checkpoint_dir=\"" + resumed.string() + "\"", "train.steps=13"});
    const TrainSummary s =
        train_run(text, {"train.checkpoint_dir=\"" + resumed.string() + "\"", "train.resume=true"});
    EXPECT_EQ(s.steps, 37);
    // Steps 14..37; step 24 is the last, partial batch of the epoch (6000 = 23 x 256 + 112).
    EXPECT_EQ(s.samples, 23 * 256 + 112);
    const std::string a = checkpoint_path(straight.string(), 37), b = checkpoint_path(resumed.string(), 37);
    ASSERT_TRUE(fs::exists(a) && fs::exists(b));
    EXPECT_TRUE(file_bytes(a) == file_bytes(b)) << "resumed run differs from the straight run";
    fs::remove_all(straight);
    fs::remove_all(resumed);
  }
}

// A damaged newest checkpoint is skipped on resume (with a warning) in favour of the
// previous one, and training still ends where the straight run does.
TEST(Trainer, ResumeSkipsADamagedCheckpoint) {
  const std::string text = small_config("dlrm", "adagrad", "rowwise_adagrad");
  const auto dir = fresh_dir("damaged");
  train_run(text, {"train.checkpoint_dir=\"" + dir.string() + "\"", "train.steps=20", "train.checkpoint_every=10"});
  const std::string newest = checkpoint_path(dir.string(), 20);
  fs::resize_file(newest, fs::file_size(newest) - 7);  // a torn write
  const TrainSummary s = train_run(text, {"train.checkpoint_dir=\"" + dir.string() + "\"", "train.resume=true"});
  EXPECT_EQ(s.samples, 26 * 256 + 112);  // steps 11..37, one of them the partial batch
  fs::remove_all(dir);
}

// A diverging run stops with a NumericError naming the step; the message names the last
// checkpoint, whose state was checked, and it stays loadable.
TEST(Trainer, NanLossStopsAndKeepsTheCheckpoint) {
  const auto dir = fresh_dir("nan");
  const std::string text = small_config("dlrm", "sgd", "sgd");
  train_run(text, {"train.checkpoint_dir=\"" + dir.string() + "\"", "train.steps=5"});
  try {
    train_run(text, {"train.checkpoint_dir=\"" + dir.string() + "\"", "train.resume=true", "optim.lr=1e6",
                 "optim.warmup_steps=0", "optim.decay_start=0", "optim.decay_steps=0", "train.checkpoint_every=1000"});
    FAIL() << "no NumericError";
  } catch (const NumericError& e) {
    EXPECT_NE(std::string(e.what()).find("loss is"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("step "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("The last checkpoint of a state checked finite and within bounds is " +
                                         checkpoint_path(dir.string(), 5) + "."),
              std::string::npos)
        << e.what();
  }
  const auto all = list_checkpoints(dir.string());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(verify_checkpoint(all[0]).step, 5);
  fs::remove_all(dir);
}

// Training on the planted teacher learns: the AUC beats chance clearly and the metrics
// log holds train, eval and final records.
TEST(Trainer, LearnsAndLogsMetrics) {
  const auto dir = fresh_dir("metrics");
  const std::string metrics = (dir / "m.jsonl").string();
  const TrainSummary s = train_run(small_config("dcnv2", "adagrad", "rowwise_adagrad"),
                               {"train.metrics_path=\"" + metrics + "\"", "train.steps=60", "train.eval_every=30"});
  EXPECT_GT(s.eval.auc, 0.6);
  EXPECT_GT(s.bayes_optimal_auc, s.eval.auc - 0.01);
  EXPECT_EQ(s.eval.samples, 2000);
  std::ifstream in(metrics);
  std::string line;
  int train_lines = 0, eval_lines = 0, final_lines = 0;
  while (std::getline(in, line)) {
    train_lines += line.find("\"type\":\"train\"") != std::string::npos;
    eval_lines += line.find("\"type\":\"eval\"") != std::string::npos;
    final_lines += line.find("\"type\":\"final\"") != std::string::npos;
  }
  EXPECT_EQ(train_lines, 12);
  EXPECT_EQ(eval_lines, 2);  // step 30 and the end
  EXPECT_EQ(final_lines, 1);
  fs::remove_all(dir);
}

TEST(Trainer, CheckpointForAnotherModelIsRefused) {
  const auto dir = fresh_dir("othermodel");
  train_run(small_config("dlrm", "adagrad", "rowwise_adagrad"), {"train.checkpoint_dir=\"" + dir.string() + "\"", "train.steps=2"});
  try {
    train_run(small_config("dlrm", "adagrad", "rowwise_adagrad"),
          {"train.checkpoint_dir=\"" + dir.string() + "\"", "train.resume=true", "model.table_rows=[500, 3000, 51]"});
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("was written for model"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// An unfinished write left by a crash (its temporary file, named with the pid of a process
// that no longer exists) is removed at the next start; a live process's temporary and
// finished checkpoints are kept.
TEST(Trainer, LeftoverTemporaryCheckpointFilesAreRemoved) {
  const auto dir = fresh_dir("torn");
  const std::string text = small_config("dlrm", "adagrad", "rowwise_adagrad");
  train_run(text, {"train.checkpoint_dir=\"" + dir.string() + "\"", "train.steps=2"});
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const fs::path torn = dir / ("ckpt-000000000004.hck.tmp-" + std::to_string(dead));
  const fs::path live = dir / ("ckpt-000000000005.hck.tmp-" + std::to_string(::getppid()));
  std::ofstream(torn) << std::string(1000, 'x');
  std::ofstream(live) << std::string(1000, 'y');
  train_run(text, {"train.checkpoint_dir=\"" + dir.string() + "\"", "train.resume=true", "train.steps=3"});
  EXPECT_FALSE(fs::exists(torn));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(checkpoint_path(dir.string(), 2)));
  EXPECT_TRUE(fs::exists(checkpoint_path(dir.string(), 3)));
  fs::remove_all(dir);
}
