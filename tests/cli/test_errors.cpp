// Bad input through the real program: each gives a clear message naming the file, line,
// field or key, and a non-zero exit code that says what kind of problem it was.
#include <gtest/gtest.h>

#include "cli_test_support.h"

using namespace hetrec::test;
namespace fs = std::filesystem;

namespace {
constexpr int kConfig = 2, kData = 3, kIo = 4;

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// A small Criteo-layout config whose data comes from TSV files in `dir`.
std::string tsv_config(const fs::path& dir, const std::string& extra = "") {
  return "[model]\nembedding_dim = 4\ntable_rows = [" + [] {
    std::string s;
    for (int t = 0; t < 26; ++t) s += (t ? ", " : "") + std::to_string(100 + t);
    return s;
  }() + "]\nbottom_mlp = [8, 4]\ntop_mlp = [8, 1]\n[data]\nformat = \"criteo_tsv\"\ntrain_path = \"" +
         (dir / "train.tsv").string() + "\"\neval_path = \"" + (dir / "train.tsv").string() + "\"\n" + extra +
         "[train]\nbatch_size = 4\nprogress = \"off\"\nlog_level = \"warn\"\n";
}

std::string tsv_line(int label, const std::string& dense5 = "5", const std::string& cat7 = "0a1b2c3d") {
  std::string s = std::to_string(label);
  for (int i = 0; i < 13; ++i) s += "\t" + (i == 4 ? dense5 : std::to_string(i));
  for (int i = 0; i < 26; ++i) s += "\t" + (i == 6 ? cat7 : std::string("68fd1e64"));
  return s + "\n";
}
}  // namespace

TEST(CliErrors, UnknownConfigKeyAndBadType) {
  const auto dir = scratch_dir("cfg");
  auto r = run_hetrec("train --config configs/demo.toml --set train.bach_size=3", dir);
  EXPECT_EQ(r.code, kConfig);
  EXPECT_NE(r.err.find("unknown config key 'train.bach_size'"), std::string::npos) << r.err;
  r = run_hetrec("train --config configs/demo.toml --set optim.lr=fast", dir);
  EXPECT_EQ(r.code, kConfig);
  EXPECT_NE(r.err.find("'optim.lr': expected a number, got a string"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// The README: a config error is exit code 2, and a config file that is not there is one.
TEST(CliErrors, MissingConfigOrRecipeFileIsAConfigError) {
  const auto dir = scratch_dir("nocfg");
  auto r = run_hetrec("train --config /nonexistent.toml", dir);
  EXPECT_EQ(r.code, kConfig) << r.err;
  EXPECT_NE(r.err.find("config error: config file '/nonexistent.toml': cannot open for reading"), std::string::npos)
      << r.err;
  r = run_hetrec("train --config configs/demo.toml --recipe /nonexistent-recipe.toml", dir);
  EXPECT_EQ(r.code, kConfig) << r.err;
  EXPECT_NE(r.err.find("recipe file '/nonexistent-recipe.toml'"), std::string::npos) << r.err;
  r = run_hetrec("eval --config /nonexistent.toml --checkpoint /nonexistent.hck", dir);
  EXPECT_EQ(r.code, kConfig) << r.err;
  r = run_hetrec("plan --config /nonexistent.toml", dir);
  EXPECT_EQ(r.code, kConfig) << r.err;
  fs::remove_all(dir);
}

// A bad value given with --set is reported against the option, not against a line of the
// config file it overrides.
TEST(CliErrors, BadSetValueNamesTheOption) {
  const auto dir = scratch_dir("setval");
  auto r = run_hetrec("train --config configs/demo.toml --set optim.lr=fast", dir);
  EXPECT_EQ(r.code, kConfig) << r.err;
  EXPECT_NE(r.err.find("config error: --set optim.lr=fast: config key 'optim.lr': expected a number, got a string"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("demo.toml"), std::string::npos) << r.err;
  r = run_hetrec("train --config configs/demo.toml --set train.batch_size=0", dir);
  EXPECT_EQ(r.code, kConfig) << r.err;
  EXPECT_NE(r.err.find("--set train.batch_size=0: config key 'train.batch_size'"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// `hetrec` alone prints the usage on stderr and exits with 2; so does a command line the
// parser rejects (with its message).
TEST(CliErrors, BareHetrecPrintsUsageAndExitsTwo) {
  const auto dir = scratch_dir("bare");
  auto r = run_hetrec("", dir);
  EXPECT_EQ(r.code, kConfig) << r.err;
  EXPECT_NE(r.err.find("Usage:"), std::string::npos) << r.err;
  for (const char* command : {"train", "eval", "data", "plan"})
    EXPECT_NE(r.err.find(command), std::string::npos) << command << " is not listed: " << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = run_hetrec("train", dir);  // --config missing
  EXPECT_EQ(r.code, kConfig) << r.err;
  EXPECT_NE(r.err.find("--config"), std::string::npos) << r.err;
  r = run_hetrec("--no-such-option", dir);
  EXPECT_EQ(r.code, kConfig) << r.err;
  r = run_hetrec("--help", dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Usage:"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(CliErrors, MalformedTsvNamesFileLineAndField) {
  const auto dir = scratch_dir("tsv");
  write(dir / "train.tsv", tsv_line(1) + tsv_line(0) + tsv_line(1, "12x") + tsv_line(0));
  write(dir / "c.toml", tsv_config(dir));
  auto r = run_hetrec("train --config " + (dir / "c.toml").string() + " --set train.steps=2", dir);
  EXPECT_EQ(r.code, kData) << r.err;
  EXPECT_NE(r.err.find("train.tsv:3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("I5"), std::string::npos) << r.err;
  // With on_error = "skip" the line is skipped and counted.
  write(dir / "c.toml", tsv_config(dir, "on_error = \"skip\"\n"));
  r = run_hetrec("train --config " + (dir / "c.toml").string() + " --set train.steps=1 --set train.metrics_path='" +
                     (dir / "m.jsonl").string() + "'",
                 dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(slurp(dir / "m.jsonl").find("\"skipped_lines\":1"), std::string::npos) << slurp(dir / "m.jsonl");
  fs::remove_all(dir);
}

TEST(CliErrors, MissingDataFileNamesTheKey) {
  const auto dir = scratch_dir("missing");
  write(dir / "c.toml", tsv_config(dir));
  const auto r = run_hetrec("train --config " + (dir / "c.toml").string(), dir);
  EXPECT_EQ(r.code, kIo) << r.err;
  EXPECT_NE(r.err.find("train.tsv"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("data.train_path"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(CliData, ConvertInspectAndTrainFromBinary) {
  const auto dir = scratch_dir("convert");
  std::string tsv;
  for (int i = 0; i < 64; ++i) tsv += tsv_line(i % 3 == 0, i % 5 == 0 ? "" : std::to_string(i), i % 7 == 0 ? "" : "00ff00ff");
  write(dir / "train.tsv", tsv);
  write(dir / "c.toml", tsv_config(dir));
  auto r = run_hetrec("data convert --config " + (dir / "c.toml").string() + " --input " + (dir / "train.tsv").string() +
                          " --output " + (dir / "train.hbin").string(),
                      dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("64 samples"), std::string::npos) << r.out;
  r = run_hetrec("data inspect " + (dir / "train.hbin").string(), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("64"), std::string::npos) << r.out;
  r = run_hetrec("train --config " + (dir / "c.toml").string() + " --set data.format=binary --set data.train_path='" +
                     (dir / "train.hbin").string() + "' --set data.eval_path='" + (dir / "train.hbin").string() +
                     "' --set train.epochs=2",
                 dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("eval AUC"), std::string::npos) << r.out;
  // A truncated binary file is refused with its name.
  fs::resize_file(dir / "train.hbin", fs::file_size(dir / "train.hbin") - 10);
  r = run_hetrec("data inspect " + (dir / "train.hbin").string(), dir);
  EXPECT_EQ(r.code, kData) << r.out;
  EXPECT_NE(r.err.find("train.hbin"), std::string::npos) << r.err;
  fs::remove_all(dir);
}
