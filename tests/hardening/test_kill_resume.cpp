// Fault injection: the hetrec program is killed (SIGKILL) at seeded random moments (at least
// 50, more on a slow machine until enough of them land where they must) while
// it trains with frequent, large checkpoints, many of the kills landing inside a
// checkpoint write. After every kill each checkpoint on disk verifies (no torn file ever
// carries a checkpoint's name), the next run resumes from the newest one, and every chain
// of interrupted runs ends with the same final checkpoint, byte for byte, as a run that
// was never interrupted.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/rng.h"
#include "hetrec_process.h"
#include "train/checkpoint.h"

#ifdef HETREC_EXE

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using hetrec::test::HetrecProcess;
using hetrec::test::read_text;

namespace {

constexpr int kKills = 50;
constexpr uint64_t kKillSeed = 0x6b696c6c;  // seeds every kill moment
constexpr int64_t kSteps = 40;
// Half the kills wait for a checkpoint's temporary file, then strike within this delay
// (a write of the ~18 MB state takes longer); the other half strike at a uniform moment
// within a third of an uninterrupted run.
constexpr auto kMaxDelayInWrite = 15ms;
// At least this many kills must find a checkpoint being written, or the test did not
// exercise what it is for.
constexpr int kMinKillsDuringWrite = 15;
// At least this many runs must resume from a checkpoint and say so. Every kill that waits
// for a write and has a checkpoint behind it is one; a uniform strike may land before the
// resume line on a loaded machine, so those are not counted on.
constexpr int kMinResumesChecked = 15;
// On a loaded machine more of the uniform strikes land before a run's resume line or its
// first write: the kills go on past kKills, up to this many, until both minimums are met.
constexpr int kMaxKills = 100;
constexpr auto kPollInterval = 1ms;
constexpr auto kRunTimeout = 120s;

// Two large tables (250k rows x 16 fp32, about 16 MB) make each checkpoint write long
// compared with a training step, so random kills often land inside one.
std::string config_text(const fs::path& dir) {
  return R"([model]
arch = "dlrm"
num_dense = 4
embedding_dim = 16
table_rows = [160000, 90000, 50]
bottom_mlp = [16]
top_mlp = [8, 1]
[optim]
dense = "adagrad"
sparse = "rowwise_adagrad"
lr = 0.02
[data.synthetic]
train_samples = 8192
eval_samples = 512
seed = 11
[train]
batch_size = 128
steps = )" + std::to_string(kSteps) + R"(
checkpoint_every = 2
keep_checkpoints = 2
resume = true
eval_samples = 512
eval_batch_size = 512
progress = "off"
threads = 1
checkpoint_dir = ")" + (dir / "ckpt").string() + R"("
)";
}

class Scratch {
 public:
  Scratch() : path_(fs::temp_directory_path() / ("hetrec_kill_resume_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Scratch() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::vector<fs::path> temporary_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) out.push_back(e.path());
  return out;
}

// save_checkpoint writes "<final name>.tmp-<pid>" before renaming it.
bool is_temporary_file_of(const fs::path& file, pid_t pid) {
  const std::string name = file.filename().string(), suffix = ".tmp-" + std::to_string(pid);
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool has_temporary_file_of(const fs::path& dir, pid_t pid) {
  for (const auto& p : temporary_files(dir))
    if (is_temporary_file_of(p, pid)) return true;
  return false;
}

// The <path> of the run's "resumed from <path> at step <n>" line, or "" without one.
std::string resumed_from(const std::string& log) {
  const std::string marker = "resumed from ";
  const std::size_t at = log.find(marker);
  if (at == std::string::npos) return {};
  const std::size_t begin = at + marker.size();
  return log.substr(begin, log.find(' ', begin) - begin);
}

struct Runner {
  fs::path dir, config;
  int runs = 0;

  std::unique_ptr<HetrecProcess> start() {
    ++runs;
    return std::make_unique<HetrecProcess>(HETREC_EXE, std::vector<std::string>{"train", "--config", config.string()},
                                           dir / "stdout.txt", dir / "stderr.txt");
  }
  // Runs to completion; returns the exit code.
  int complete() {
    auto p = start();
    p->wait();
    return p->exit_code();
  }
};

}  // namespace

TEST(KillResume, FiftyKillsNeverTearACheckpointAndResumesFinishExactly) {
  const Scratch scratch;
  Runner runner{scratch.path(), scratch.path() / "run.toml"};
  std::ofstream(runner.config) << config_text(scratch.path());
  const fs::path ckpt = scratch.path() / "ckpt";

  // An uninterrupted run: the final checkpoint every interrupted chain must reproduce.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(runner.complete(), 0) << read_text(scratch.path() / "stderr.txt");
  const auto uninterrupted = std::chrono::steady_clock::now() - t0;
  const std::string final_path = hetrec::checkpoint_path(ckpt.string(), kSteps);
  const std::string reference = read_text(final_path);
  ASSERT_FALSE(reference.empty());
  fs::remove_all(ckpt);

  hetrec::Rng rng(kKillSeed);
  int kills = 0, kills_during_write = 0, chains = 0, resumes_checked = 0;
  while (kills < kKills ||
         (kills < kMaxKills && (kills_during_write < kMinKillsDuringWrite || resumes_checked < kMinResumesChecked))) {
    // The newest checkpoint before this run is the one it must resume from.
    const auto before = hetrec::list_checkpoints(ckpt.string());
    const std::string expected_resume = before.empty() ? std::string() : before.front();

    auto run = runner.start();
    const bool wait_for_write = rng.below(2) == 0;
    const auto deadline = std::chrono::steady_clock::now() + kRunTimeout;
    if (wait_for_write) {
      while (!run->poll() && !has_temporary_file_of(ckpt, run->pid()) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(kPollInterval);
      std::this_thread::sleep_for(std::chrono::microseconds(
          rng.below(static_cast<uint64_t>(std::chrono::microseconds(kMaxDelayInWrite).count()))));
    } else {
      // Anywhere in an uninterrupted run's time: its start-up (device probe, data, model)
      // can take most of a short run, so a window of the run's first part alone can hold no
      // resume line and no finished checkpoint at all.
      const auto window = std::chrono::duration_cast<std::chrono::microseconds>(uninterrupted);
      const auto strike = std::chrono::steady_clock::now() +
                          std::chrono::microseconds(rng.below(static_cast<uint64_t>(window.count()) + 1));
      while (!run->poll() && std::chrono::steady_clock::now() < strike) std::this_thread::sleep_for(kPollInterval);
    }
    if (!run->poll()) run->kill_now();
    run->wait();
    const std::string log = read_text(scratch.path() / "stderr.txt");

    // Whatever the moment, a resumed run starts from the newest checkpoint of the last
    // one, never from a temporary file.
    const std::string resumed = resumed_from(log);
    if (!resumed.empty()) {
      EXPECT_EQ(resumed, expected_resume) << "run " << runner.runs;
      EXPECT_EQ(resumed.find(".tmp-"), std::string::npos);
      ++resumes_checked;
    } else if (log.find("starting from step 0") != std::string::npos) {
      EXPECT_EQ(expected_resume, "") << "run " << runner.runs << " ignored the checkpoints on disk";
    }

    // A run that got as far as writing a checkpoint had passed its resume line.
    const bool reached_a_write = !run->killed() || has_temporary_file_of(ckpt, run->pid()) ||
                                 hetrec::list_checkpoints(ckpt.string()) != before;
    if (!expected_resume.empty() && reached_a_write) {
      EXPECT_FALSE(resumed.empty()) << "run " << runner.runs << " wrote a checkpoint without resuming from "
                                    << expected_resume;
    }

    if (run->killed()) {
      ++kills;
      if (has_temporary_file_of(ckpt, run->pid())) ++kills_during_write;
      for (const std::string& path : hetrec::list_checkpoints(ckpt.string()))
        EXPECT_NO_THROW(hetrec::verify_checkpoint(path)) << "after kill " << kills << ": " << path;
      // Keep the torn file of this kill, which the next run must walk past (and removes at
      // start, its owner being dead); drop older ones.
      for (const fs::path& tmp : temporary_files(ckpt))
        if (!is_temporary_file_of(tmp, run->pid())) fs::remove(tmp);
      continue;
    }
    // The run finished: the chain of interrupted runs must end where the uninterrupted
    // run ended, bit for bit.
    ASSERT_EQ(run->exit_code(), 0) << log;
    EXPECT_EQ(read_text(final_path), reference) << "chain " << chains << " ended in another final state";
    // The last kill's torn file was removed at this run's start; its own were renamed.
    EXPECT_TRUE(temporary_files(ckpt).empty()) << "run " << runner.runs << " left a temporary file";
    ++chains;
    fs::remove_all(ckpt);
  }
  // Finish the last chain without interruption.
  if (fs::exists(ckpt)) {
    ASSERT_EQ(runner.complete(), 0) << read_text(scratch.path() / "stderr.txt");
    EXPECT_EQ(read_text(final_path), reference) << "the last chain ended in another final state";
    ++chains;
  }
  EXPECT_GE(kills_during_write, kMinKillsDuringWrite) << "too few kills landed inside a checkpoint write";
  EXPECT_GE(resumes_checked, kMinResumesChecked) << "too few runs resumed before they were killed";
  std::printf("%d kills (%d during a checkpoint write), %d resumes checked, %d chains completed, %d runs\n", kills,
              kills_during_write, resumes_checked, chains, runner.runs);
}

#else

TEST(KillResume, FiftyKillsNeverTearACheckpointAndResumesFinishExactly) {
  GTEST_SKIP() << "the hetrec program is not built";
}

#endif
