#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/rng.h"
#include "data/binary_source.h"
#include "data/binary_tools.h"
#include "data/criteo_tsv.h"
#include "data/make_source.h"
#include "data/pipeline.h"
#include "data/synthetic.h"
#include "data_test_util.h"

using namespace hetrec;
using hetrec::testing::FlatSample;
using hetrec::testing::flatten;
using hetrec::testing::read_all;
using hetrec::testing::TempDir;

namespace {

SyntheticConfig config(int64_t train) {
  SyntheticConfig c;
  c.train_samples = train;
  c.eval_samples = 100;
  c.seed = 21;
  return c;
}

// A TSV file of `lines` valid lines with line `bad_line` (1-based) malformed in field C2.
std::string tsv_with_bad_line(int64_t lines, int64_t bad_line) {
  Rng rng(3);
  std::string text;
  for (int64_t i = 1; i <= lines; ++i) {
    text += std::to_string(rng.below(2));
    for (int j = 0; j < 2; ++j) text += fmt::format("\t{}", rng.below(1000));
    text += fmt::format("\t{:08x}\t{}", rng.next_u32(), i == bad_line ? "xyz" : fmt::format("{:08x}", rng.next_u32()));
    text += "\n";
  }
  return text;
}

CriteoLayout layout() {
  CriteoLayout l;
  l.num_dense = 2;
  l.rows = {100, 100};
  return l;
}

}  // namespace

TEST(Pipeline, DeliversTheSourceInOrder) {
  const ModelConfig model = hetrec::testing::small_model();
  SyntheticSource direct(model, config(1000), Split::train, 1);
  const auto expected = read_all(direct, 64);
  Pipeline pipeline(std::make_unique<SyntheticSource>(model, config(1000), Split::train, 2), 64, 3);
  EXPECT_EQ(pipeline.size_hint(), 1000);
  EXPECT_EQ(pipeline.position(), 0);
  std::vector<FlatSample> got;
  Batch batch;
  int64_t delivered = 0;
  while (pipeline.next(batch)) {
    flatten(batch, got);
    delivered += batch.size;
    EXPECT_EQ(pipeline.position(), delivered);
    EXPECT_EQ(pipeline.counters().samples, delivered);
  }
  EXPECT_EQ(got, expected);
  EXPECT_FALSE(pipeline.next(batch));  // stays exhausted
  EXPECT_EQ(pipeline.position(), 1000);
}

TEST(Pipeline, PositionIsTheConsumersNotTheProducers) {
  const ModelConfig model = hetrec::testing::small_model();
  Pipeline pipeline(std::make_unique<SyntheticSource>(model, config(10000), Split::train, 1), 100, 4);
  Batch batch;
  ASSERT_TRUE(pipeline.next(batch));
  // Give the producer time to run ahead and fill the queue.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(pipeline.position(), 100);
  EXPECT_EQ(pipeline.counters().samples, 100);
}

TEST(Pipeline, SeekRestartsAtTheSample) {
  const ModelConfig model = hetrec::testing::small_model();
  SyntheticSource direct(model, config(1000), Split::train, 1);
  const auto expected = read_all(direct, 1000);
  Pipeline pipeline(std::make_unique<SyntheticSource>(model, config(1000), Split::train, 2), 50, 2);
  Batch batch;
  ASSERT_TRUE(pipeline.next(batch));
  ASSERT_TRUE(pipeline.next(batch));
  pipeline.seek(333);
  EXPECT_EQ(pipeline.position(), 333);
  std::vector<FlatSample> got;
  while (pipeline.next(batch)) flatten(batch, got);
  ASSERT_EQ(got.size(), 1000u - 333u);
  for (std::size_t k = 0; k < got.size(); ++k) ASSERT_EQ(got[k], expected[333 + k]);
  pipeline.seek(0);  // also after the end
  ASSERT_TRUE(pipeline.next(batch));
  EXPECT_EQ(batch.first_sample, 0);
  EXPECT_THROW(pipeline.seek(5000), DataError);
  EXPECT_THROW(pipeline.next(batch), DataError);  // the failed seek is reported until a good one
  pipeline.seek(990);
  ASSERT_TRUE(pipeline.next(batch));
  EXPECT_EQ(batch.size, 10);
}

TEST(Pipeline, ProducerErrorsReachTheConsumerAfterTheGoodBatches) {
  TempDir dir;
  const std::string path = dir.file("bad.tsv");
  hetrec::testing::write_text(path, tsv_with_bad_line(400, 150));
  Pipeline pipeline(std::make_unique<CriteoTsvSource>(path, layout(), OnError::fail, 2), 64, 4);
  Batch batch;
  ASSERT_TRUE(pipeline.next(batch));  // lines 1..64
  ASSERT_TRUE(pipeline.next(batch));  // lines 65..128
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      pipeline.next(batch);
      FAIL() << "expected DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.tsv:150: field C2: expected 8 hex digits, got 'xyz'"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(pipeline.position(), 128);
  // Skip mode: the same file flows through, the counter follows the delivered batches.
  Pipeline skipping(std::make_unique<CriteoTsvSource>(path, layout(), OnError::skip, 2), 64, 2);
  int64_t samples = 0;
  while (skipping.next(batch)) {
    samples += batch.size;
    EXPECT_EQ(skipping.counters().skipped_lines, samples >= 149 ? 1 : 0);
  }
  EXPECT_EQ(samples, 399);
  EXPECT_EQ(skipping.counters().skipped_lines, 1);
}

TEST(Pipeline, RecyclesBuffersAndShutsDownWhileFull) {
  ModelConfig model;
  model.num_dense = 3;
  model.tables = {hetrec::testing::table("a", 100, 2), hetrec::testing::table("b", 50)};  // fixed bags
  Pipeline pipeline(std::make_unique<SyntheticSource>(model, config(100000), Split::train, 1), 128, 3);
  Batch batch;
  std::set<const float*> buffers;
  for (int k = 0; k < 40; ++k) {
    ASSERT_TRUE(pipeline.next(batch));
    if (k >= 5) buffers.insert(batch.dense.data());
  }
  // prefetch_batches buffers circulate, plus the one the consumer holds.
  EXPECT_LE(buffers.size(), 4u);
  // Destroying a pipeline whose producer waits on a full queue must not hang.
  {
    Pipeline idle(std::make_unique<SyntheticSource>(model, config(100000), Split::train, 1), 128, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_THROW(Pipeline(std::make_unique<SyntheticSource>(model, config(10), Split::train), 8, 0), ConfigError);
  EXPECT_THROW(Pipeline(std::make_unique<SyntheticSource>(model, config(10), Split::train), 0, 2), ConfigError);
}

TEST(MakeSource, ChoosesTheFormatAndNamesConfigKeys) {
  TempDir dir;
  ModelConfig model;
  model.num_dense = 2;
  model.tables = {hetrec::testing::table("c1", 100), hetrec::testing::table("c2", 100)};
  DataConfig data;
  data.synthetic = config(500);
  auto train = make_source(data, model, Split::train);
  auto eval = make_source(data, model, Split::eval);
  EXPECT_EQ(train->size_hint(), 500);
  EXPECT_EQ(eval->size_hint(), 100);
  EXPECT_NE(train->describe().find("synthetic"), std::string::npos);

  data.format = DataFormat::criteo_tsv;
  try {
    make_source(data, model, Split::train);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("data.train_path"), std::string::npos) << e.what();
  }
  data.eval_path = dir.file("absent.tsv");
  try {
    make_source(data, model, Split::eval);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.tsv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("data.eval_path"), std::string::npos) << e.what();
  }
  hetrec::testing::write_text(dir.file("train.tsv"), tsv_with_bad_line(300, 0));
  data.train_path = dir.file("train.tsv");
  auto tsv = make_source(data, model, Split::train);
  EXPECT_EQ(tsv->size_hint(), -1);
  const auto from_tsv = read_all(*tsv, 100);
  EXPECT_EQ(from_tsv.size(), 300u);
  data.missing_categorical_id = 100;
  EXPECT_THROW(make_source(data, model, Split::train), ConfigError);
  data.missing_categorical_id = 0;

  convert_tsv_to_binary(dir.file("train.tsv"), dir.file("train.bin"), make_criteo_layout(data, model));
  data.format = DataFormat::binary;
  data.train_path = dir.file("train.bin");
  auto binary = make_source(data, model, Split::train);
  EXPECT_EQ(binary->size_hint(), 300);
  EXPECT_EQ(read_all(*binary, 64), from_tsv);
  data.eval_path = dir.file("absent.bin");
  try {
    make_source(data, model, Split::eval);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("data.eval_path"), std::string::npos) << e.what();
  }
  data.reader_threads = 0;
  EXPECT_THROW(make_source(data, model, Split::train), ConfigError);
}
