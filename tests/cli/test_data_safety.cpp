// Data files through the real program: `data convert` and `data synth` never destroy
// data (an output that is one of the inputs or not a regular file is refused before
// anything is written; a failed run leaves an existing output byte for byte as it was and
// no file of its own behind; a conversion that writes no sample is an error), and the
// commands that check files say so in their exit code (`data inspect`, `data verify`,
// `train` on a file whose last row group is damaged).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "cli_test_support.h"

using namespace hetrec::test;
namespace fs = std::filesystem;

namespace {

// Exit codes of `hetrec` (src/cli/main.cpp, README "Exit codes").
constexpr int kExitConfig = 2, kExitData = 3, kExitIo = 4;
// Samples per row group of the files `data convert` and `data synth` write
// (kDefaultGroupSamples, docs/data_format.md).
constexpr int64_t kGroupSamples = 65536;
// The multi-group file: two full groups and a short last one.
constexpr int64_t kLastGroupSamples = 512;
constexpr int64_t kSynthSamples = 2 * kGroupSamples + kLastGroupSamples;
constexpr int kTrainBatch = 256;
// Bytes from the end of a binary file to its group count and to the group offsets
// (the trailer, docs/data_format.md: offsets, S, G, CRC, reserved, end marker).
constexpr std::size_t kTrailerTail = 32, kGroupCountFromEnd = 24;
// Where a payload byte of a row group lies: after its 24-byte header.
constexpr std::size_t kGroupHeaderBytes = 24;

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// A Criteo line of the 13 + 26 layout; `bad` makes field I1 malformed.
std::string tsv_line(int i, bool bad = false) {
  std::string s = std::to_string(i % 2);
  for (int d = 0; d < 13; ++d) s += "\t" + (bad && d == 0 ? std::string("x") : std::to_string((i + d) % 50));
  for (int c = 0; c < 26; ++c) s += "\t" + std::to_string(1000 + i * 26 + c);
  return s + "\n";
}

std::string tsv_lines(int n, bool bad = false) {
  std::string s;
  for (int i = 0; i < n; ++i) s += tsv_line(i, bad);
  return s;
}

// The Criteo-layout config `data convert` reads (26 tables of 100 rows).
std::string convert_config(const std::string& extra = "") {
  std::string rows;
  for (int t = 0; t < 26; ++t) rows += (t ? ", " : "") + std::string("100");
  return "[model]\nembedding_dim = 4\ntable_rows = [" + rows + "]\nbottom_mlp = [8, 4]\ntop_mlp = [8, 1]\n[data]\n" +
         extra + "[train]\nlog_level = \"warn\"\n";
}

// A tiny synthetic model whose train split spans three row groups; `rows1` sizes the
// second table (smaller than the file's in the verify test).
std::string synth_config(int rows1 = 40) {
  return "[model]\nnum_dense = 2\nembedding_dim = 4\ntable_rows = [50, " + std::to_string(rows1) +
         "]\nbottom_mlp = [4]\ntop_mlp = [4, 1]\n[data.synthetic]\ntrain_samples = " + std::to_string(kSynthSamples) +
         "\neval_samples = 256\n[train]\nbatch_size = " + std::to_string(kTrainBatch) +
         "\nprogress = \"off\"\nlog_level = \"warn\"\nthreads = 1\n";
}

bool has_temporary(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return true;
  return false;
}

template <class T>
T field(const std::string& bytes, std::size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

// The file offset of each row group, from the trailer.
std::vector<uint64_t> group_offsets(const std::string& bytes) {
  const auto groups = field<uint64_t>(bytes, bytes.size() - kGroupCountFromEnd);
  const std::size_t index = bytes.size() - kTrailerTail - 8 * groups;
  std::vector<uint64_t> out;
  for (uint64_t g = 0; g < groups; ++g) out.push_back(field<uint64_t>(bytes, index + 8 * g));
  return out;
}

// Flips one payload byte of row group g (its checksum then fails).
void damage_group(const fs::path& file, std::size_t g) {
  std::string bytes = slurp(file);
  const std::vector<uint64_t> offsets = group_offsets(bytes);
  ASSERT_LT(g, offsets.size());
  bytes[offsets[g] + kGroupHeaderBytes + 10] ^= 0x01;
  write(file, bytes);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class DataSafety : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratch_dir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { fs::remove_all(dir_); }

  RunResult convert(const fs::path& config, const fs::path& input, const fs::path& output) {
    return run_hetrec("data convert --config " + quoted(config) + " --input " + quoted(input) + " --output " +
                          quoted(output),
                      dir_);
  }
  // The three-group synthetic file, written by `data synth`.
  fs::path synth_file(const std::string& name = "synth.hbin") {
    write(dir_ / "synth.toml", synth_config());
    const fs::path out = dir_ / name;
    const RunResult r = run_hetrec("data synth --config " + quoted(dir_ / "synth.toml") + " --output " + quoted(out), dir_);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find(std::to_string(kSynthSamples) + " samples in 3 row groups"), std::string::npos) << r.out;
    return out;
  }

  fs::path dir_;
};

}  // namespace

// Guarantee: an output that is the input (same path, a symbolic or a hard link to it)
// or the config is refused before anything is written; the file stays as it was.
// Before: the TSV file was truncated to an empty data file and the exit code was 0.
TEST_F(DataSafety, ConvertRefusesAnOutputThatIsItsInputOrConfig) {
  const fs::path tsv = dir_ / "day.tsv", config = dir_ / "convert.toml";
  write(tsv, tsv_lines(40));
  write(config, convert_config());
  const std::string tsv_bytes = slurp(tsv), config_bytes = slurp(config);
  fs::create_hard_link(tsv, dir_ / "hard.tsv");
  fs::create_symlink(tsv, dir_ / "soft.tsv");
  for (const fs::path& out : {tsv, dir_ / "hard.tsv", dir_ / "soft.tsv"}) {
    const RunResult r = convert(config, tsv, out);
    EXPECT_EQ(r.code, kExitConfig) << out << ": " << r.err;
    EXPECT_NE(r.err.find(out.string() + ": the output is the same file as --input"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nothing was written"), std::string::npos) << r.err;
    EXPECT_TRUE(slurp(tsv) == tsv_bytes) << "the input changed";
  }
  const RunResult r = convert(config, tsv, config);
  EXPECT_EQ(r.code, kExitConfig) << r.err;
  EXPECT_NE(r.err.find("the output is the same file as --config"), std::string::npos) << r.err;
  EXPECT_TRUE(slurp(config) == config_bytes) << "the config changed";
  EXPECT_TRUE(slurp(tsv) == tsv_bytes);
  EXPECT_FALSE(has_temporary(dir_));
}

// Guarantee: `data synth` refuses to write over its config (its input).
// Before: the config was replaced by a binary file, exit code 0.
TEST_F(DataSafety, SynthRefusesToWriteOverItsConfig) {
  const fs::path config = dir_ / "synth.toml";
  write(config, synth_config());
  const std::string before = slurp(config);
  fs::create_symlink(config, dir_ / "link.toml");
  for (const fs::path& out : {config, dir_ / "link.toml"}) {
    const RunResult r = run_hetrec("data synth --config " + quoted(config) + " --samples 100 --output " + quoted(out), dir_);
    EXPECT_EQ(r.code, kExitConfig) << r.err;
    EXPECT_NE(r.err.find("the output is the same file as --config"), std::string::npos) << r.err;
    EXPECT_TRUE(slurp(config) == before) << "the config changed";
  }
  EXPECT_FALSE(has_temporary(dir_));
}

// Guarantee: an output that exists and is not a regular file (a directory, a device
// node, reached directly or through a link) is refused and left alone.
// Before: a directory was removed (exit 4), a link to /dev/null was written through (exit 0).
TEST_F(DataSafety, ConvertRefusesAnOutputThatIsNotARegularFile) {
  const fs::path tsv = dir_ / "day.tsv", config = dir_ / "convert.toml";
  write(tsv, tsv_lines(40));
  write(config, convert_config());
  fs::create_directory(dir_ / "out.dir");
  RunResult r = convert(config, tsv, dir_ / "out.dir");
  EXPECT_EQ(r.code, kExitConfig) << r.err;
  EXPECT_NE(r.err.find("out.dir: the output exists and is a directory"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_directory(dir_ / "out.dir")) << "the directory named by --output was removed";
  fs::create_symlink("/dev/null", dir_ / "null.hbin");
  r = convert(config, tsv, dir_ / "null.hbin");
  EXPECT_EQ(r.code, kExitConfig) << r.err;
  EXPECT_NE(r.err.find("null.hbin: the output exists and is a character device"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir_ / "null.hbin"));
  EXPECT_FALSE(has_temporary(dir_));
}

// Guarantee: a failed conversion leaves an existing output byte-identical and removes
// only its own temporary file; a good one replaces the output whole.
// Before: the existing output was truncated, then deleted.
TEST_F(DataSafety, FailedConvertLeavesTheExistingOutputByteIdentical) {
  const fs::path good = dir_ / "good.tsv", bad = dir_ / "bad.tsv", config = dir_ / "convert.toml",
                 out = dir_ / "day.hbin";
  write(good, tsv_lines(64));
  write(bad, tsv_lines(30) + tsv_line(30, true) + tsv_lines(10));
  write(config, convert_config());
  RunResult r = convert(config, good, out);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string before = slurp(out);
  ASSERT_FALSE(before.empty());

  r = convert(config, bad, out);
  EXPECT_EQ(r.code, kExitData) << r.err;
  EXPECT_NE(r.err.find("bad.tsv:31"), std::string::npos) << r.err;
  ASSERT_TRUE(fs::exists(out)) << "the existing output was removed";
  EXPECT_TRUE(slurp(out) == before) << "the existing output changed";
  EXPECT_FALSE(has_temporary(dir_));

  write(good, tsv_lines(80));
  r = convert(config, good, out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("80 samples"), std::string::npos) << r.out;
  EXPECT_TRUE(slurp(out) != before);
  EXPECT_FALSE(has_temporary(dir_));
}

// Guarantee: a conversion that writes no sample (every line skipped, or an empty input)
// is a data error, and an existing output stays as it was.
// Before: exit code 0 and the output replaced by a file of zero samples.
TEST_F(DataSafety, ConvertThatWritesNoSampleIsAnError) {
  const fs::path good = dir_ / "good.tsv", junk = dir_ / "junk.tsv", empty = dir_ / "empty.tsv",
                 config = dir_ / "convert.toml", out = dir_ / "day.hbin";
  write(good, tsv_lines(16));
  write(junk, tsv_lines(20, true));
  write(empty, "");
  write(config, convert_config("on_error = \"skip\"\n"));
  RunResult r = convert(config, good, out);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string before = slurp(out);

  r = convert(config, junk, out);
  EXPECT_EQ(r.code, kExitData) << r.out << r.err;
  EXPECT_NE(r.err.find("junk.tsv: no sample to write: all 20 lines were malformed and skipped"), std::string::npos)
      << r.err;
  r = convert(config, empty, out);
  EXPECT_EQ(r.code, kExitData) << r.out << r.err;
  EXPECT_NE(r.err.find("empty.tsv: no sample to write"), std::string::npos) << r.err;
  EXPECT_TRUE(slurp(out) == before) << "the existing output changed";
  EXPECT_FALSE(has_temporary(dir_));
}

// Guarantee: `data inspect` prints its report and exits 3 when a row group is damaged.
// Before: exit code 0 after "1 of 3 row groups failed".
TEST_F(DataSafety, InspectOfADamagedFileExitsWithTheDataCode) {
  const fs::path file = synth_file();
  RunResult r = run_hetrec("data inspect " + quoted(file), dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("checksums: all 3 row groups ok"), std::string::npos) << r.out;
  damage_group(file, 1);
  r = run_hetrec("data inspect " + quoted(file), dir_);
  EXPECT_EQ(r.code, kExitData) << r.out << r.err;
  EXPECT_NE(r.out.find("checksums: 1 of 3 row groups failed"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("row group 1 (samples 65536..131071): checksum mismatch"), std::string::npos) << r.err;
}

// Guarantee: `data verify FILE...` checks every checksum and every id against the
// config's tables, shows its progress, gives one summary per file and exits 0 only
// when every file is sound (3 when one is damaged, 4 when one cannot be read).
// Before: there was no `data verify`.
TEST_F(DataSafety, VerifyChecksEveryFileAndSaysSoInItsExitCode) {
  const fs::path good = synth_file("good.hbin");
  fs::copy_file(good, dir_ / "bad.hbin");
  damage_group(dir_ / "bad.hbin", 2);
  const std::string config = quoted(dir_ / "synth.toml");

  RunResult r = run_hetrec("data verify --config " + config + " " + quoted(good), dir_);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(good.string() + ": ok: " + std::to_string(kSynthSamples) + " samples in 3 row groups"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("verify " + good.string() + ": row group 3/3 (100.0%)"), std::string::npos) << r.err;

  r = run_hetrec("data verify --config " + config + " " + quoted(good) + " " + quoted(dir_ / "bad.hbin"), dir_);
  EXPECT_EQ(r.code, kExitData) << r.out << r.err;
  EXPECT_NE(r.out.find(good.string() + ": ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bad.hbin: DAMAGED: 1 problem"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bad.hbin: row group 2 (samples 131072..131583): checksum mismatch"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("1 of 2 files damaged"), std::string::npos) << r.err;

  // Ids against the config's tables: the file's second table has 40 rows, this config 7.
  write(dir_ / "narrow.toml", synth_config(7));
  r = run_hetrec("data verify --config " + quoted(dir_ / "narrow.toml") + " " + quoted(good), dir_);
  EXPECT_EQ(r.code, kExitData) << r.out << r.err;
  EXPECT_NE(r.out.find("table 1 is declared with 40 rows, more than model.tables[1]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("good.hbin: row group 0, sample "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outside model.tables[1] (t1).rows = 7"), std::string::npos) << r.out;

  r = run_hetrec("data verify --config " + config + " " + quoted(dir_ / "missing.hbin"), dir_);
  EXPECT_EQ(r.code, kExitIo) << r.out << r.err;
  EXPECT_NE(r.out.find("missing.hbin: UNREADABLE"), std::string::npos) << r.out;
}

// Guarantee: training verifies every row group's checksum ahead of the reader, so a
// damaged last group stops the run (exit 3, naming the group) long before the epoch
// reaches it, and no sample of it is ever trained on.
// Before: all 512 steps of the intact groups were trained, then the run failed.
TEST_F(DataSafety, TrainStopsAtADamagedLastGroupBeforeTheEpochReachesIt) {
  const fs::path file = synth_file();
  damage_group(file, 2);
  const fs::path metrics = dir_ / "metrics.jsonl";
  const RunResult r = run_hetrec("train --config " + quoted(dir_ / "synth.toml") +
                                     " --set data.format=binary --set data.train_path=" + quoted(file) +
                                     " --set train.epochs=1 --set train.log_every=1 --set train.eval_at_end=false"
                                     " --set train.metrics_path=" + quoted(metrics),
                                 dir_);
  EXPECT_EQ(r.code, kExitData) << r.err;
  EXPECT_NE(r.err.find("synth.hbin: row group 2 (samples 131072..131583): checksum mismatch"), std::string::npos)
      << r.err;
  // The epoch reaches group 2 at step 2 * 65536 / 256 + 1 = 513.
  constexpr int kStepsBeforeTheGroup = static_cast<int>(2 * kGroupSamples / kTrainBatch);
  const int trained = count(slurp(metrics), "\"type\":\"train\"");
  EXPECT_LT(trained, kStepsBeforeTheGroup / 2) << "the damage was found only when the epoch got near it";
}
