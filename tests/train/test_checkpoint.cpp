#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/rng.h"
#include "train/checkpoint.h"

using namespace hetrec;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("hetrec_ckpt_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<NamedTensor> random_state(uint64_t seed, int64_t rows = 300) {
  Rng rng(seed);
  std::vector<NamedTensor> s;
  Tensor w = Tensor::empty({rows, 16}, DType::f32);
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(rng.normal());
  Tensor h = Tensor::empty({rows, 8}, DType::bf16);
  for (int64_t i = 0; i < h.numel(); ++i) h.data<uint16_t>()[i] = static_cast<uint16_t>(rng.next_u32());
  Tensor step = Tensor::empty({1}, DType::i64);
  step.data<int64_t>()[0] = static_cast<int64_t>(seed);
  s.push_back({"embedding.t0.weight", w});
  s.push_back({"embedding.t1.weight", h});
  s.push_back({"step", step});
  return s;
}

bool same_bytes(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].tensor.nbytes() != b[i].tensor.nbytes() ||
        std::memcmp(a[i].tensor.raw(), b[i].tensor.raw(), a[i].tensor.nbytes()) != 0)
      return false;
  return true;
}

void flip_byte(const fs::path& p, std::streamoff at) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c;
  f.read(&c, 1);
  c ^= 0x5A;
  f.seekp(at);
  f.write(&c, 1);
}

}  // namespace

TEST(Checkpoint, RoundTripIsBitwise) {
  const auto dir = fresh_dir("roundtrip");
  auto state = random_state(1);
  const std::string path = checkpoint_path(dir.string(), 42);
  save_checkpoint(path, {42, 1, 4096, "sig"}, state);
  auto loaded = random_state(2);
  ASSERT_FALSE(same_bytes(state, loaded));
  const CheckpointMeta m = load_checkpoint(path, loaded);
  EXPECT_TRUE(same_bytes(state, loaded));
  EXPECT_EQ(m.step, 42);
  EXPECT_EQ(m.epoch, 1);
  EXPECT_EQ(m.data_position, 4096);
  EXPECT_EQ(m.model_signature, "sig");
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

TEST(Checkpoint, CorruptionTruncationAndForeignFilesAreDetected) {
  const auto dir = fresh_dir("corrupt");
  auto state = random_state(3);
  const fs::path path = checkpoint_path(dir.string(), 1);
  save_checkpoint(path.string(), {1, 0, 0, "sig"}, state);
  const auto size = fs::file_size(path);
  // A flipped byte anywhere in the data fails the checksum, and the model is untouched.
  fs::copy_file(path, dir / "flipped.hck");
  flip_byte(dir / "flipped.hck", static_cast<std::streamoff>(size / 2));
  auto target = random_state(4);
  auto before = random_state(4);
  try {
    load_checkpoint((dir / "flipped.hck").string(), target);
    FAIL() << "corruption not detected";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("flipped.hck"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(same_bytes(target, before));
  // Truncation at several points.
  for (uintmax_t cut : {uintmax_t{4}, uintmax_t{30}, size / 3, size - 1}) {
    fs::copy_file(path, dir / "cut.hck", fs::copy_options::overwrite_existing);
    fs::resize_file(dir / "cut.hck", cut);
    EXPECT_THROW(verify_checkpoint((dir / "cut.hck").string()), CheckpointError) << "cut at " << cut;
  }
  // A foreign file.
  std::ofstream(dir / "foreign.hck") << "PK\x03\x04 this is a zip file, not a checkpoint";
  try {
    verify_checkpoint((dir / "foreign.hck").string());
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("bad magic"), std::string::npos) << e.what();
  }
  EXPECT_THROW(verify_checkpoint((dir / "missing.hck").string()), IoError);
  fs::remove_all(dir);
}

TEST(Checkpoint, ShapeOrNameMismatchIsRefused) {
  const auto dir = fresh_dir("mismatch");
  const std::string path = checkpoint_path(dir.string(), 5);
  save_checkpoint(path, {5, 0, 0, "sig"}, random_state(5, 300));
  auto other = random_state(6, 200);
  try {
    load_checkpoint(path, other);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("embedding.t0.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[300, 16]"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(Checkpoint, ListingIsNewestFirst) {
  const auto dir = fresh_dir("list");
  for (int64_t s : {9, 100, 12}) save_checkpoint(checkpoint_path(dir.string(), s), {s, 0, 0, "sig"}, random_state(7));
  std::ofstream(dir / "notes.txt") << "x";
  const auto all = list_checkpoints(dir.string());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], checkpoint_path(dir.string(), 100));
  EXPECT_EQ(all[2], checkpoint_path(dir.string(), 9));
  fs::remove_all(dir);
}

// A write that hits a full disk (emulated with a file-size limit) fails with a clear
// error and leaves the previous checkpoint intact and no temporary file behind.
TEST(Checkpoint, FullDiskKeepsThePreviousCheckpoint) {
  const auto dir = fresh_dir("full");
  const std::string good = checkpoint_path(dir.string(), 1);
  save_checkpoint(good, {1, 0, 0, "sig"}, random_state(8));
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // make the limit an EFBIG error instead of a signal
    rlimit lim{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    try {
      save_checkpoint(checkpoint_path(dir.string(), 2), {2, 0, 0, "sig"}, random_state(9, 5000));
      ::_exit(10);  // should not succeed
    } catch (const IoError& e) {
      ::_exit(std::string(e.what()).find("writing checkpoint") != std::string::npos ? 0 : 11);
    } catch (...) {
      ::_exit(12);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const auto all = list_checkpoints(dir.string());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], good);
  EXPECT_NO_THROW(verify_checkpoint(good));
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1) << "temporary file left behind";
  fs::remove_all(dir);
}
