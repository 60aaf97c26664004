#pragma once
// Helpers shared by the data-layer tests: a temporary directory removed at the end of
// the test, file writing, batch comparison and small model configurations.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/source.h"
#include "model/model_config.h"

namespace hetrec::testing {

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string name = std::string("hetrec_data_") + (info ? info->test_suite_name() : "x") + "_" +
                             (info ? info->name() : "y") + "_" + std::to_string(::getpid());
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// One sample of a batch, laid out per sample, for comparisons across batch boundaries.
struct FlatSample {
  int64_t index = 0;
  float label = 0.0f;
  std::vector<float> dense;
  std::vector<std::vector<int32_t>> bags;
  bool operator==(const FlatSample&) const = default;
};

// Checks the CSR invariants of `batch` and appends its samples to `out`.
inline void flatten(const Batch& batch, std::vector<FlatSample>& out) {
  ASSERT_EQ(batch.labels.size(), static_cast<std::size_t>(batch.size));
  ASSERT_EQ(batch.dense.size(), static_cast<std::size_t>(batch.size * batch.num_dense));
  ASSERT_EQ(batch.offsets.size(), static_cast<std::size_t>(batch.num_tables * batch.size + 1));
  ASSERT_EQ(batch.offsets.front(), 0);
  ASSERT_EQ(static_cast<std::size_t>(batch.offsets.back()), batch.ids.size());
  for (std::size_t k = 1; k < batch.offsets.size(); ++k) ASSERT_LE(batch.offsets[k - 1], batch.offsets[k]);
  for (int64_t b = 0; b < batch.size; ++b) {
    FlatSample s;
    s.index = batch.first_sample + b;
    s.label = batch.labels[static_cast<std::size_t>(b)];
    s.dense.assign(batch.dense.begin() + b * batch.num_dense, batch.dense.begin() + (b + 1) * batch.num_dense);
    for (int t = 0; t < batch.num_tables; ++t)
      s.bags.emplace_back(batch.ids.begin() + batch.bag_begin(t, b), batch.ids.begin() + batch.bag_end(t, b));
    out.push_back(std::move(s));
  }
}

// Every remaining sample of `source`, read in batches of `batch_size`.
inline std::vector<FlatSample> read_all(BatchSource& source, int64_t batch_size) {
  std::vector<FlatSample> out;
  Batch batch;
  while (source.next(batch, batch_size)) flatten(batch, out);
  return out;
}

inline TableConfig table(const std::string& name, int64_t rows, int hotness = 1, bool variable = false,
                         Pooling pooling = Pooling::sum) {
  TableConfig t;
  t.name = name;
  t.rows = rows;
  t.hotness = hotness;
  t.variable_bags = variable;
  t.pooling = pooling;
  return t;
}

// Four tables covering the cases: one-hot, a 40M-row variable multi-hot table, a tiny
// mean-pooled table and a 3-row table.
inline ModelConfig small_model(int num_dense = 5) {
  ModelConfig m;
  m.num_dense = num_dense;
  m.tables = {table("t0", 1000), table("t1", 40000000, 3, true), table("t2", 7, 2, false, Pooling::mean),
              table("t3", 3)};
  return m;
}

}  // namespace hetrec::testing
