// The MLPerf multi-hot days and the bundled Criteo configs through the real program:
// `hetrec train` on day files of the MLPerf layout and on the same days converted by
// `hetrec data convert` give bit-identical checkpoints and identical metrics; malformed
// days stop the run with exit code 3 and a message naming the file; the Kaggle config
// trains on a small TSV file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "../data/npy_test_files.h"
#include "cli_test_support.h"

using namespace hetrec::test;
namespace fs = std::filesystem;
namespace npy = hetrec::testing::npy;

namespace {

constexpr int kData = 3;

std::vector<int64_t> small_rows() {
  std::vector<int64_t> rows;
  for (int t = 0; t < 26; ++t) rows.push_back(30 + 11 * t);
  return rows;
}

// configs/criteo_1tb_multihot.toml with tables and layers small enough for a test (the
// data layout, hotness and format stay the config's).
std::string small_mlperf(const fs::path& dir, const std::string& train, const std::string& eval) {
  std::string rows;
  for (int64_t r : small_rows()) {
    if (!rows.empty()) rows += ',';
    rows += std::to_string(r);
  }
  return "--config configs/criteo_1tb_multihot.toml --set 'model.table_rows=[" + rows +
         "]' --set model.embedding_dim=8 --set 'model.bottom_mlp=[16,8]' --set 'model.top_mlp=[16,1]'"
         " --set model.cross_rank=4 --set train.batch_size=16 --set train.eval_batch_size=32"
         " --set train.eval_samples=0 --set train.progress=off --set train.log_level=warn --set train.threads=1"
         " --set train.device=cpu --set data.reader_threads=2 --set train.log_every=1"
         " --set 'data.train_path=" + train + "' --set 'data.eval_path=" + eval + "'" +
         " --set 'train.metrics_path=" + (dir / "metrics.jsonl").string() + "'";
}

std::vector<nlohmann::json> records(const fs::path& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The numbers of the metrics that depend only on the data and the model (not on time).
std::string learning_record(const std::vector<nlohmann::json>& rs) {
  std::ostringstream s;
  for (const auto& r : rs) {
    const std::string type = r.value("type", "");
    if (type == "train") s << "train " << r["step"] << " " << r["loss"] << " " << r["last_loss"] << "\n";
    if (type == "eval") s << "eval " << r["step"] << " " << r["auc"] << " " << r["log_loss"] << "\n";
    if (type == "final") s << "final " << r["loss"] << " " << r.value("auc", nlohmann::json()) << "\n";
  }
  return s.str();
}

// Three days of the MLPerf layout: stored members, some deflated ones, a ZIP64 archive.
void write_days(const fs::path& dir) {
  fs::create_directories(dir);
  const auto rows = small_rows();
  npy::write_day((dir / "day_0").string(), npy::make_day(11, 45, rows));
  npy::DayOptions deflated;
  deflated.deflate = {0, 2, 9, 20, 21};
  deflated.sparse_descr = "<i8";
  deflated.labels_2d = false;
  npy::write_day((dir / "day_1").string(), npy::make_day(12, 40, rows), deflated);
  npy::DayOptions zip64;
  zip64.zip64 = true;
  for (int t = 0; t < 26; ++t) zip64.deflate.insert(t);
  npy::write_day((dir / "day_2").string(), npy::make_day(13, 48, rows), zip64);
}

}  // namespace

TEST(CliMlperfMultihot, TrainingOnTheDaysAndOnTheirConversionIsBitIdentical) {
  const auto dir = scratch_dir("mlperf_same");
  const fs::path days = dir / "days";
  write_days(days);
  const std::string train_days = (days / "day_{0..1}").string(), eval_day = (days / "day_2").string();
  const std::string ckpt = " --set train.steps=5 --set train.checkpoint_every=5 --set train.eval_every=5";

  const fs::path a = dir / "a", b = dir / "b";
  fs::create_directories(a);
  fs::create_directories(b);
  auto r = run_hetrec("train " + small_mlperf(a, train_days, eval_day) + ckpt + " --set 'train.checkpoint_dir=" +
                          (a / "ckpt").string() + "'",
                      a);
  ASSERT_EQ(r.code, 0) << r.err;

  // Convert the same days (the config's format picks the reader), with a progress line.
  r = run_hetrec("data convert " + small_mlperf(dir, train_days, eval_day) + " --input '" + train_days +
                     "' --output '" + (dir / "train.hbin").string() + "'",
                 dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("85 samples"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("convert -> " + (dir / "train.hbin").string() + ": 85/85 samples (100.0%)"), std::string::npos)
      << r.err;
  r = run_hetrec("data convert " + small_mlperf(dir, train_days, eval_day) + " --input '" + eval_day +
                     "' --output '" + (dir / "eval.hbin").string() + "'",
                 dir);
  ASSERT_EQ(r.code, 0) << r.err;

  r = run_hetrec("train " + small_mlperf(b, (dir / "train.hbin").string(), (dir / "eval.hbin").string()) + ckpt +
                     " --set data.format=binary --set 'train.checkpoint_dir=" + (b / "ckpt").string() + "'",
                 b);
  ASSERT_EQ(r.code, 0) << r.err;

  const std::string ckpt_name = "ckpt-000000000005.hck";
  ASSERT_TRUE(fs::exists(a / "ckpt" / ckpt_name));
  ASSERT_TRUE(fs::exists(b / "ckpt" / ckpt_name));
  const std::string ca = slurp(a / "ckpt" / ckpt_name), cb = slurp(b / "ckpt" / ckpt_name);
  EXPECT_FALSE(ca.empty());
  EXPECT_TRUE(ca == cb) << "the checkpoints after 5 steps differ";
  const std::string la = learning_record(records(a / "metrics.jsonl"));
  EXPECT_NE(la.find("eval 5"), std::string::npos) << la;
  EXPECT_EQ(la, learning_record(records(b / "metrics.jsonl")));
  fs::remove_all(dir);
}

// A run stopped at a checkpoint whose position lies inside a day of deflated members,
// then resumed, ends with the checkpoint of an uninterrupted run (the reader seeks to a
// day and a row, restarting the members' streams), across an epoch's end.
TEST(CliMlperfMultihot, ResumeInsideADeflatedDayIsExact) {
  const auto dir = scratch_dir("mlperf_resume");
  const fs::path days = dir / "days";
  write_days(days);
  const std::string train_days = (days / "day_{0..2}").string(), eval_day = (days / "day_2").string();
  const std::string full = (dir / "full").string(), part = (dir / "part").string();
  // 133 samples an epoch: 12 steps of 16 wrap once; step 4 ends at sample 64, in day 1.
  // Each run keeps its own metrics file (one run per file); the resume appends to its run's.
  const std::string full_metrics = " --set 'train.metrics_path=" + full + "-metrics.jsonl'";
  const std::string part_metrics = " --set 'train.metrics_path=" + part + "-metrics.jsonl'";
  auto r = run_hetrec("train " + small_mlperf(dir, train_days, eval_day) +
                          " --set train.steps=12 --set train.checkpoint_every=12 --set 'train.checkpoint_dir=" + full +
                          "'" + full_metrics,
                      dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_hetrec("train " + small_mlperf(dir, train_days, eval_day) +
                     " --set train.steps=4 --set train.checkpoint_every=4 --set 'train.checkpoint_dir=" + part + "'" +
                     part_metrics,
                 dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_hetrec("train " + small_mlperf(dir, train_days, eval_day) +
                     " --set train.steps=12 --set train.checkpoint_every=12 --set train.resume=true"
                     " --set 'train.checkpoint_dir=" + part + "'" + part_metrics,
                 dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string a = slurp(fs::path(full) / "ckpt-000000000012.hck");
  EXPECT_FALSE(a.empty());
  EXPECT_TRUE(a == slurp(fs::path(part) / "ckpt-000000000012.hck")) << "the resumed run ends elsewhere";
  fs::remove_all(dir);
}

TEST(CliMlperfMultihot, MalformedDaysExitWithDataErrorsNamingTheFile) {
  const auto dir = scratch_dir("mlperf_bad");
  const auto rows = small_rows();
  struct Case {
    std::string name;
    std::function<void(const std::string& prefix)> damage;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {"truncated",
       [](const std::string& p) {
         fs::resize_file(p + "_dense.npy", fs::file_size(p + "_dense.npy") - 7);
       },
       {"day_0_dense.npy", "truncated"}},
      {"dtype",
       [](const std::string& p) {
         const std::vector<double> v(20 * 13, 0.5);
         npy::write_file(p + "_dense.npy", npy::npy_of("<f8", {20, 13}, v));
       },
       {"day_0_dense.npy", "expected float32"}},
      {"fortran",
       [](const std::string& p) {
         const std::vector<int32_t> v(20, 1);
         npy::write_file(p + "_labels.npy", npy::npy("<i4", {20, 1}, v.data(), v.size() * 4, 1, true));
       },
       {"day_0_labels.npy", "Fortran"}},
      {"counts",
       [](const std::string& p) {
         const std::vector<int32_t> v(19, 1);
         npy::write_file(p + "_labels.npy", npy::npy_of("<i4", {19, 1}, v));
       },
       {"day_0_labels.npy", "19 samples", "holds 20"}},
      {"missing7",
       [&](const std::string& p) {
         npy::DayOptions o;
         o.skip_members = {7};
         npy::write_day(p, npy::make_day(21, 20, rows), o);
       },
       {"day_0_sparse_multi_hot.npz", "no member '7.npy'"}},
      {"id_range",
       [&](const std::string& p) {
         npy::Day d = npy::make_day(21, 20, rows);
         d.ids[9][static_cast<std::size_t>(13 * 7 + 2)] = rows[9] + 5;  // table 9 has hotness 7: sample 13
         npy::DayOptions o;
         o.deflate = {9};
         npy::write_day(p, d, o);
       },
       {"day_0_sparse_multi_hot.npz, member '9.npy'", "sample 13, table 9", "id " + std::to_string(rows[9] + 5)}},
  };
  for (const Case& c : cases) {
    const fs::path days = dir / c.name;
    fs::create_directories(days);
    const std::string prefix = (days / "day_0").string();
    npy::write_day(prefix, npy::make_day(21, 20, rows));
    c.damage(prefix);
    const auto r = run_hetrec("train " + small_mlperf(days, prefix, prefix) + " --set train.steps=2", days);
    EXPECT_EQ(r.code, kData) << c.name << ": " << r.err;
    for (const std::string& e : c.expect) EXPECT_NE(r.err.find(e), std::string::npos) << c.name << ": " << r.err;
    // The converter refuses the same files with the same error.
    const auto rc = run_hetrec("data convert " + small_mlperf(days, prefix, prefix) + " --input '" + prefix +
                                   "' --output '" + (days / "out.hbin").string() + "'",
                               days);
    EXPECT_EQ(rc.code, kData) << c.name << ": " << rc.err;
    for (const std::string& e : c.expect) EXPECT_NE(rc.err.find(e), std::string::npos) << c.name << ": " << rc.err;
  }
  fs::remove_all(dir);
}

TEST(CliMlperfMultihot, KaggleConfigTrainsOnASmallTsvFile) {
  const auto dir = scratch_dir("kaggle");
  std::ofstream tsv(dir / "train.tsv");
  uint64_t s = 5;
  for (int line = 0; line < 300; ++line) {
    tsv << (npy::splitmix(s) % 4 == 0 ? 1 : 0);
    for (int i = 0; i < 13; ++i) {
      tsv << '\t';
      if (npy::splitmix(s) % 10 != 0) tsv << static_cast<int64_t>(npy::splitmix(s) % 500) - 3;  // some empty
    }
    for (int c = 0; c < 26; ++c) {
      tsv << '\t';
      if (npy::splitmix(s) % 12 == 0) continue;  // an empty categorical
      char hex[9];
      std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(npy::splitmix(s)));
      tsv << hex;
    }
    tsv << '\n';
  }
  tsv.close();
  const auto r = run_hetrec("train --config configs/criteo_kaggle.toml --set 'data.train_path=" +
                                (dir / "train.tsv").string() + "' --set train.steps=2 --set train.progress=off" +
                                " --set 'train.metrics_path=" + (dir / "m.jsonl").string() + "'",
                            dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rs = records(dir / "m.jsonl");
  ASSERT_FALSE(rs.empty());
  const auto& final_record = rs.back();
  EXPECT_EQ(final_record.value("type", ""), "final");
  EXPECT_EQ(final_record.value("step", -1), 2);
  EXPECT_TRUE(std::isfinite(final_record.value("loss", NAN))) << final_record.dump();
  fs::remove_all(dir);
}
