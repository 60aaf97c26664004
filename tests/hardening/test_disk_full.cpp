// A full disk, through the real program: every file hetrec writes is capped (RLIMIT_FSIZE,
// SIGXFSZ ignored, so writes fail with EFBIG as on a full disk). Training must stop with
// a message naming the file and the cause and a non-zero exit code, leave the previous
// checkpoint intact and no temporary file behind, and resume once space is back. A data
// conversion must fail the same way and remove its partial output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/rng.h"
#include "hetrec_process.h"
#include "train/checkpoint.h"

#ifdef HETREC_EXE

namespace fs = std::filesystem;
using hetrec::test::HetrecProcess;
using hetrec::test::read_text;

namespace {

// Exit code of an I/O or checkpoint error (README "Exit codes").
constexpr int kExitIo = 4;
// Below one checkpoint of the model below (20000 x 16 fp32 rows, about 1.3 MB) and far
// above the program's log output.
constexpr rlim_t kCheckpointLimitBytes = 256 * 1024;
// Below the binary file converted from kTsvLines lines (261 bytes a sample).
constexpr rlim_t kConvertLimitBytes = 64 * 1024;
constexpr int kTsvLines = 2000;
constexpr uint64_t kTsvSeed = 0x7473;

class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : path_(fs::temp_directory_path() / ("hetrec_disk_full_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Scratch() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct Outcome {
  int code;
  std::string out, err;
};

Outcome run(const fs::path& dir, const std::vector<std::string>& args, rlim_t file_size_limit = 0) {
  hetrec::test::ProcessLimits limits;
  limits.file_size = file_size_limit;
  HetrecProcess p(HETREC_EXE, args, dir / "stdout.txt", dir / "stderr.txt", limits);
  p.wait();
  return {p.exit_code(), read_text(dir / "stdout.txt"), read_text(dir / "stderr.txt")};
}

std::string train_config(const fs::path& dir) {
  return R"([model]
num_dense = 3
embedding_dim = 16
table_rows = [20000, 10]
bottom_mlp = [16]
top_mlp = [4, 1]
[data.synthetic]
train_samples = 4096
eval_samples = 256
[train]
batch_size = 64
steps = 4
checkpoint_every = 2
eval_samples = 256
progress = "off"
threads = 1
checkpoint_dir = ")" + (dir / "ckpt").string() + "\"\n";
}

}  // namespace

TEST(DiskFull, TrainingStopsWithAMessageAndKeepsThePreviousCheckpoint) {
  const Scratch s("train");
  const fs::path config = s.path() / "run.toml";
  std::ofstream(config) << train_config(s.path());
  const fs::path ckpt = s.path() / "ckpt";

  const Outcome first = run(s.path(), {"train", "--config", config.string()});
  ASSERT_EQ(first.code, 0) << first.err;
  const auto before = hetrec::list_checkpoints(ckpt.string());
  ASSERT_EQ(before.size(), 2u);
  const std::string newest = read_text(before.front());
  ASSERT_GT(newest.size(), kCheckpointLimitBytes);

  // The disk fills up: the next checkpoint cannot be written.
  const Outcome full = run(s.path(),
                           {"train", "--config", config.string(), "--set", "train.resume=true", "--set", "train.steps=8"},
                           kCheckpointLimitBytes);
  EXPECT_EQ(full.code, kExitIo) << full.err;
  EXPECT_NE(full.err.find("I/O error"), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("File too large"), std::string::npos) << full.err;  // strerror(EFBIG)
  EXPECT_NE(full.err.find((ckpt / "ckpt-").string()), std::string::npos) << "the message names the file: " << full.err;
  EXPECT_EQ(hetrec::list_checkpoints(ckpt.string()), before);
  EXPECT_EQ(read_text(before.front()), newest) << "the previous checkpoint changed";
  EXPECT_NO_THROW(hetrec::verify_checkpoint(before.front()));
  for (const auto& e : fs::directory_iterator(ckpt))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();

  // Space is back: the run resumes from the intact checkpoint and finishes.
  const Outcome resumed = run(s.path(), {"train", "--config", config.string(), "--set", "train.resume=true", "--set",
                                         "train.steps=8"});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resumed from " + before.front() + " at step 4"), std::string::npos) << resumed.err;
  EXPECT_NO_THROW(hetrec::verify_checkpoint(hetrec::checkpoint_path(ckpt.string(), 8)));
}

TEST(DiskFull, ConvertFailsWithAMessageAndRemovesItsPartialOutput) {
  const Scratch s("convert");
  const fs::path tsv = s.path() / "day.tsv", out = s.path() / "day.hbin", config = s.path() / "convert.toml";
  {
    hetrec::Rng rng(kTsvSeed);
    std::ofstream f(tsv);
    for (int i = 0; i < kTsvLines; ++i) {
      f << rng.below(2);
      for (int j = 0; j < 13; ++j) f << '\t' << rng.below(1000);
      for (int j = 0; j < 26; ++j) f << '\t' << std::hex << rng.next_u32() << std::dec;
      f << '\n';
    }
  }
  std::ofstream(config) << "[model]\nnum_dense = 13\nembedding_dim = 4\n"
                           "table_rows = [97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, 97, "
                           "97, 97, 97, 97, 97, 97, 97, 97]\nbottom_mlp = [4]\ntop_mlp = [1]\n";
  const Outcome full = run(s.path(), {"data", "convert", "--config", config.string(), "--input", tsv.string(),
                                      "--output", out.string()},
                           kConvertLimitBytes);
  EXPECT_EQ(full.code, kExitIo) << full.err;
  EXPECT_NE(full.err.find(out.string()), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("File too large"), std::string::npos) << full.err;
  EXPECT_FALSE(fs::exists(out)) << "the partial output was left behind";

  const Outcome ok = run(s.path(), {"data", "convert", "--config", config.string(), "--input", tsv.string(),
                                    "--output", out.string()});
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_GT(fs::file_size(out), kConvertLimitBytes);
}

#else

TEST(DiskFull, TrainingStopsWithAMessageAndKeepsThePreviousCheckpoint) { GTEST_SKIP() << "hetrec is not built"; }

#endif
