// Checkpoint directories through the real hetrec program: one run per directory (a lock),
// temporaries that a planted link cannot redirect, only dead runs' temporaries removed at
// start, and a checkpoint that cannot be read stops the run instead of being skipped
// (docs/reliability.md).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/exclusive_file.h"
#include "hetrec_process.h"
#include "train/checkpoint.h"

#ifdef HETREC_EXE

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using hetrec::test::HetrecProcess;
using hetrec::test::read_text;

namespace {

constexpr int kExitIo = 4;
constexpr auto kRunTimeout = 120s;
constexpr auto kPollInterval = 5ms;

class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : path_(fs::temp_directory_path() / ("hetrec_ckpt_dir_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Scratch() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A small model; `steps` and `checkpoint_every` set the run's length and its writes.
std::string config_text(const fs::path& ckpt, int steps, int checkpoint_every) {
  return R"([model]
num_dense = 4
embedding_dim = 16
table_rows = [20000, 3000, 50]
bottom_mlp = [16]
top_mlp = [8, 1]
[data.synthetic]
train_samples = 65536
eval_samples = 512
seed = 5
[train]
batch_size = 128
steps = )" + std::to_string(steps) + R"(
checkpoint_every = )" + std::to_string(checkpoint_every) + R"(
keep_checkpoints = 100
resume = true
eval_samples = 512
eval_batch_size = 512
progress = "off"
threads = 1
checkpoint_dir = ")" + ckpt.string() + "\"\n";
}

struct Finished {
  int code = -1;
  std::string err;
};

Finished run_to_end(const fs::path& dir, const fs::path& config, const std::string& tag) {
  HetrecProcess p(HETREC_EXE, {"train", "--config", config.string()}, dir / (tag + ".out"), dir / (tag + ".err"));
  p.wait();
  return {p.exit_code(), read_text(dir / (tag + ".err"))};
}

std::vector<fs::path> temporaries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) out.push_back(e.path());
  return out;
}

}  // namespace

// A second run on a directory that a live run uses stops at once (exit 4) naming the
// holder's pid; the first run is not disturbed and ends with every checkpoint whole.
TEST(CheckpointDir, ASecondRunOnTheSameDirectoryStopsAndNamesTheFirst) {
  const Scratch s("lock");
  const fs::path ckpt = s.path() / "ckpt", config = s.path() / "run.toml";
  // Long enough (about 8 s on one thread) to outlast the second run's start, which on a
  // CUDA build without a GPU includes the device probe's 0.4 s.
  constexpr int kSteps = 40000, kEvery = 2000;
  std::ofstream(config) << config_text(ckpt, kSteps, kEvery);

  HetrecProcess first(HETREC_EXE, {"train", "--config", config.string()}, s.path() / "first.out", s.path() / "first.err");
  // Running: past its start (the "train data" line comes after the model is built).
  const auto deadline = std::chrono::steady_clock::now() + kRunTimeout;
  while (!first.poll() && read_text(s.path() / "first.err").find("train data:") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(kPollInterval);
  ASSERT_FALSE(first.poll()) << "the first run ended before the second started: " << read_text(s.path() / "first.err");

  const Finished second = run_to_end(s.path(), config, "second");
  const bool first_still_running = !first.poll();
  EXPECT_EQ(second.code, kExitIo) << second.err;
  EXPECT_NE(second.err.find("is in use by another run (pid " + std::to_string(first.pid()) + " holds"),
            std::string::npos)
      << second.err;
  EXPECT_TRUE(first_still_running) << "the first run should outlast the second's start";

  first.wait();
  EXPECT_EQ(first.exit_code(), 0) << read_text(s.path() / "first.err");
  const auto all = hetrec::list_checkpoints(ckpt.string());
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kSteps / kEvery));
  for (const std::string& path : all) EXPECT_NO_THROW(hetrec::verify_checkpoint(path)) << path;
  EXPECT_EQ(hetrec::verify_checkpoint(hetrec::checkpoint_path(ckpt.string(), kSteps)).step, kSteps);
  EXPECT_TRUE(temporaries(ckpt).empty());

  // The lock ends with its run: a third run on the directory resumes and finishes.
  const Finished third = run_to_end(s.path(), config, "third");
  EXPECT_EQ(third.code, 0) << third.err;
}

// A symbolic link planted at the predictable name of a checkpoint's temporary
// ("<checkpoint>.tmp-<pid>") cannot redirect the write: the run stops with an I/O error
// naming the temporary, and the link's target is untouched.
TEST(CheckpointDir, APlantedSymlinkAtATemporaryNameCannotRedirectTheWrite) {
  const Scratch s("symlink");
  const fs::path ckpt = s.path() / "ckpt", config = s.path() / "run.toml", target = s.path() / "precious.txt";
  constexpr int kSteps = 10, kEvery = 5;
  std::ofstream(config) << config_text(ckpt, kSteps, kEvery);
  fs::create_directories(ckpt);
  const std::string precious = "a file the run must never write";
  std::ofstream(target) << precious;

  HetrecProcess run(HETREC_EXE, {"train", "--config", config.string()}, s.path() / "run.out", s.path() / "run.err");
  // The run needs far longer to start, build its model and train 5 steps than this
  // takes: the links are in place before its first checkpoint write.
  std::vector<std::string> links;
  for (int step = kEvery; step <= kSteps; step += kEvery) {
    links.push_back(hetrec::temporary_name(hetrec::checkpoint_path(ckpt.string(), step), run.pid()));
    fs::create_symlink(target, links.back());
  }
  run.wait();
  const std::string err = read_text(s.path() / "run.err");
  EXPECT_EQ(run.exit_code(), kExitIo) << err;
  EXPECT_NE(err.find(links.front()), std::string::npos) << "the message names the temporary: " << err;
  EXPECT_EQ(read_text(target), precious) << "the write went through the planted link";
  EXPECT_TRUE(fs::is_regular_file(target));
  EXPECT_TRUE(hetrec::list_checkpoints(ckpt.string()).empty());
}

// At start, a run removes the temporaries of runs that no longer exist and keeps those
// of live processes.
TEST(CheckpointDir, OnlyTemporariesOfDeadProcessesAreRemovedAtStart) {
  const Scratch s("temporaries");
  const fs::path ckpt = s.path() / "ckpt", config = s.path() / "run.toml";
  std::ofstream(config) << config_text(ckpt, 4, 2);
  fs::create_directories(ckpt);
  // A process that has ended: a child, reaped.
  pid_t dead = -1;
  {
    HetrecProcess ended("/bin/true", {}, s.path() / "true.out", s.path() / "true.err");
    ended.wait();
    dead = ended.pid();
  }
  const fs::path of_dead = hetrec::temporary_name(hetrec::checkpoint_path(ckpt.string(), 6), dead);
  const fs::path of_live = hetrec::temporary_name(hetrec::checkpoint_path(ckpt.string(), 8), ::getpid());
  std::ofstream(of_dead) << std::string(4096, 'x');
  std::ofstream(of_live) << std::string(4096, 'y');

  const Finished r = run_to_end(s.path(), config, "run");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(of_dead)) << "a dead run's temporary is left: " << r.err;
  EXPECT_TRUE(fs::exists(of_live)) << "a live process's temporary was removed: " << r.err;
  EXPECT_NE(r.err.find("removed an unfinished checkpoint write: " + of_dead.string()), std::string::npos) << r.err;
  EXPECT_EQ(hetrec::list_checkpoints(ckpt.string()).size(), 2u);
}

// A newest checkpoint that cannot be read (here a directory of a checkpoint's name; when
// not running as root, also a file without read permission) stops the run with exit 4
// naming it and the OS error, instead of rolling back to an older checkpoint. A file that
// reads but fails verification is still skipped.
TEST(CheckpointDir, AnUnreadableNewestCheckpointStopsTheRun) {
  const Scratch s("unreadable");
  const fs::path ckpt = s.path() / "ckpt", config = s.path() / "run.toml";
  std::ofstream(config) << config_text(ckpt, 4, 2);
  Finished r = run_to_end(s.path(), config, "first");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string older = hetrec::checkpoint_path(ckpt.string(), 4);
  const std::string older_bytes = read_text(older);
  std::ofstream(config) << config_text(ckpt, 12, 2);

  const std::string as_dir = hetrec::checkpoint_path(ckpt.string(), 6);
  fs::create_directories(as_dir);
  r = run_to_end(s.path(), config, "dir");
  EXPECT_EQ(r.code, kExitIo) << r.err;
  EXPECT_NE(r.err.find("checkpoint '" + as_dir + "'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Is a directory"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("resumed from"), std::string::npos) << r.err;
  EXPECT_EQ(read_text(older), older_bytes);
  EXPECT_EQ(hetrec::list_checkpoints(ckpt.string()).front(), as_dir) << "the run wrote a checkpoint";
  fs::remove(as_dir);

  if (::geteuid() != 0) {  // root reads a file whatever its mode
    const std::string unreadable = hetrec::checkpoint_path(ckpt.string(), 6);
    fs::copy_file(older, unreadable);
    fs::permissions(unreadable, fs::perms::none);
    r = run_to_end(s.path(), config, "perm");
    EXPECT_EQ(r.code, kExitIo) << r.err;
    EXPECT_NE(r.err.find("checkpoint '" + unreadable + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
    fs::permissions(unreadable, fs::perms::owner_read | fs::perms::owner_write);
    EXPECT_EQ(read_text(unreadable), older_bytes) << "the unreadable checkpoint was overwritten";
    fs::remove(unreadable);
  }

  // A damaged newest checkpoint (it reads, and fails its checksum) is skipped as before.
  const std::string damaged = hetrec::checkpoint_path(ckpt.string(), 6);
  std::ofstream(damaged, std::ios::binary) << older_bytes.substr(0, older_bytes.size() - 7);
  r = run_to_end(s.path(), config, "damaged");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("skipping damaged checkpoint"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("resumed from " + older + " at step 4"), std::string::npos) << r.err;
}

#else

TEST(CheckpointDir, ASecondRunOnTheSameDirectoryStopsAndNamesTheFirst) { GTEST_SKIP() << "the hetrec program is not built"; }

#endif
