#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/checksum.h"
#include "core/error.h"
#include "core/rng.h"
#include "data/binary_source.h"
#include "data/binary_tools.h"
#include "data/criteo_tsv.h"
#include "data/synthetic.h"
#include "data_test_util.h"

using namespace hetrec;
using hetrec::testing::FlatSample;
using hetrec::testing::flatten;
using hetrec::testing::read_all;
using hetrec::testing::read_bytes;
using hetrec::testing::TempDir;
using hetrec::testing::write_bytes;

namespace {

CriteoLayout tsv_layout() {
  CriteoLayout layout;
  layout.num_dense = 4;
  layout.rows = {1000, 7, 40000000};
  layout.mapping = CategoricalMapping::hash;
  layout.missing_id = 3;
  return layout;
}

// `lines` random TSV lines with empty fields; every 97th line is malformed when `dirty`.
std::string random_tsv(int64_t lines, uint64_t seed, bool dirty) {
  Rng rng(seed);
  std::string text;
  for (int64_t i = 0; i < lines; ++i) {
    if (dirty && i % 97 == 50) {
      text += "1\tnot-a-number\t1\t2\t3\ta\tb\tc\n";
      continue;
    }
    text += std::to_string(rng.below(2));
    for (int j = 0; j < 4; ++j) {
      text += '\t';
      if (rng.uniform() >= 0.2) text += std::to_string(static_cast<int64_t>(rng.below(100000)) - 10);
    }
    for (int t = 0; t < 3; ++t) text += rng.uniform() < 0.2 ? "\t" : fmt::format("\t{:08x}", rng.next_u32());
    text += "\n";
  }
  return text;
}

template <class T>
T load(const std::vector<char>& bytes, std::size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

template <class T>
void store(std::vector<char>& bytes, std::size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof(T));
}

// Group offsets read from the trailer, per docs/data_format.md.
std::vector<uint64_t> group_offsets(const std::vector<char>& bytes) {
  const std::size_t tail = bytes.size() - 32;
  const auto groups = load<uint64_t>(bytes, tail + 8);
  std::vector<uint64_t> out;
  for (uint64_t g = 0; g < groups; ++g) out.push_back(load<uint64_t>(bytes, tail - 8 * groups + 8 * g));
  return out;
}

// a.bin in `dir`: `lines` random TSV lines (seed `seed`) converted in row groups of 100
// samples; returns its bytes (a.tsv stays beside it).
std::vector<char> converted_tsv_bytes(const TempDir& dir, int64_t lines, uint64_t seed) {
  hetrec::testing::write_text(dir.file("a.tsv"), random_tsv(lines, seed, false));
  ConvertOptions options;
  options.group_samples = 100;
  convert_tsv_to_binary(dir.file("a.tsv"), dir.file("a.bin"), tsv_layout(), options);
  return read_bytes(dir.file("a.bin"));
}

// Recomputes the CRC-32C of the row group starting at byte `group` after an edit, so
// that only the reader's value checks can catch the edit.
void reseal_group(std::vector<char>& bytes, std::size_t group) {
  const auto payload = load<uint64_t>(bytes, group + 16);
  store<uint32_t>(bytes, group + 24 + payload, crc32c(bytes.data() + group, 24 + payload));
}

std::string data_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no DataError)";
}

}  // namespace

TEST(BinaryFormat, TsvRoundTripEqualsReadingTheTsv) {
  TempDir dir;
  const std::string tsv = dir.file("day.tsv"), bin = dir.file("day.bin");
  hetrec::testing::write_text(tsv, random_tsv(1000, 1, false));
  ConvertOptions options;
  options.group_samples = 100;
  options.threads = 2;
  const ConvertReport report = convert_tsv_to_binary(tsv, bin, tsv_layout(), options);
  EXPECT_EQ(report.samples, 1000);
  EXPECT_EQ(report.groups, 10);
  EXPECT_EQ(report.skipped_lines, 0);
  EXPECT_EQ(report.bytes, static_cast<int64_t>(std::filesystem::file_size(bin)));

  CriteoTsvSource text(tsv, tsv_layout(), OnError::fail);
  const auto expected = read_all(text, 64);
  BinarySource binary(bin);
  EXPECT_EQ(binary.size_hint(), 1000);
  EXPECT_EQ(binary.header().mapping, IdMapping::hash);
  const auto got = read_all(binary, 64);  // batches straddle row groups
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "sample " << i;
  EXPECT_EQ(binary.position(), 1000);
  // O(1) seek lands anywhere, also inside a group.
  for (int64_t at : {0, 99, 100, 555, 999}) {
    binary.seek(at);
    Batch batch;
    ASSERT_TRUE(binary.next(batch, 150));
    std::vector<FlatSample> part;
    flatten(batch, part);
    for (std::size_t k = 0; k < part.size(); ++k) ASSERT_EQ(part[k], expected[static_cast<std::size_t>(at) + k]);
  }
  binary.seek(1000);
  Batch batch;
  EXPECT_FALSE(binary.next(batch, 10));
  EXPECT_THROW(binary.seek(1001), DataError);
}

TEST(BinaryFormat, SyntheticMultiHotRoundTrip) {
  TempDir dir;
  const ModelConfig model = hetrec::testing::small_model();
  SyntheticConfig config;
  config.train_samples = 700;
  config.seed = 5;
  SyntheticSource source(model, config, Split::train, 2);
  source.seek(123);  // write_synthetic_binary starts at 0 and puts the position back
  const ConvertReport report = write_synthetic_binary(source, 700, dir.file("syn.bin"), 256);
  EXPECT_EQ(report.samples, 700);
  EXPECT_EQ(report.groups, 3);
  EXPECT_EQ(source.position(), 123);
  source.seek(0);
  const auto expected = read_all(source, 100);
  BinarySource binary(dir.file("syn.bin"), model);
  EXPECT_EQ(binary.header().mapping, IdMapping::generated);
  EXPECT_EQ(read_all(binary, 77), expected);
  EXPECT_THROW(write_synthetic_binary(source, 701, dir.file("too_many.bin")), ConfigError);
}

TEST(BinaryFormat, EmptyFileRoundTrip) {
  TempDir dir;
  hetrec::testing::write_text(dir.file("empty.tsv"), "");
  const ConvertReport report = convert_tsv_to_binary(dir.file("empty.tsv"), dir.file("empty.bin"), tsv_layout());
  EXPECT_EQ(report.samples, 0);
  EXPECT_EQ(report.groups, 0);
  BinarySource binary(dir.file("empty.bin"));
  Batch batch;
  EXPECT_FALSE(binary.next(batch, 10));
  EXPECT_NE(inspect_binary(dir.file("empty.bin")).find("samples: 0"), std::string::npos);
}

TEST(BinaryFormat, ConvertSkipsOrFailsAndRemovesPartialOutput) {
  TempDir dir;
  const std::string tsv = dir.file("dirty.tsv");
  hetrec::testing::write_text(tsv, random_tsv(500, 2, true));
  ConvertOptions options;
  options.on_error = OnError::skip;
  options.group_samples = 64;
  const ConvertReport report = convert_tsv_to_binary(tsv, dir.file("ok.bin"), tsv_layout(), options);
  EXPECT_EQ(report.skipped_lines, 5);  // lines 51, 148, 245, 342, 439
  EXPECT_EQ(report.samples, 495);
  CriteoTsvSource text(tsv, tsv_layout(), OnError::skip);
  BinarySource binary(dir.file("ok.bin"));
  EXPECT_EQ(read_all(binary, 100), read_all(text, 100));

  options.on_error = OnError::fail;
  const std::string message = data_error([&] { convert_tsv_to_binary(tsv, dir.file("bad.bin"), tsv_layout(), options); });
  EXPECT_NE(message.find("dirty.tsv:51: field I1: expected a decimal integer, got 'not-a-number'"), std::string::npos)
      << message;
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.bin")));
}

TEST(BinaryFormat, TruncatedForeignAndNewerFilesAreRejected) {
  TempDir dir;
  const std::vector<char> bytes = converted_tsv_bytes(dir, 300, 3);
  const std::string cut = dir.file("cut.bin");
  // Cut inside the header, after the header, inside a group, and one byte short.
  for (std::size_t keep : {std::size_t{4}, std::size_t{20}, std::size_t{60}, std::size_t{600}, bytes.size() - 1}) {
    write_bytes(cut, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep)));
    const std::string message = data_error([&] { BinarySource s(cut); });
    EXPECT_NE(message.find("cut.bin: truncated"), std::string::npos) << keep << ": " << message;
  }
  hetrec::testing::write_text(dir.file("foreign.bin"), "label\tI1\tI2\n1\t2\t3\n and more text to be long enough");
  EXPECT_NE(data_error([&] { BinarySource s(dir.file("foreign.bin")); })
                .find("foreign.bin: not a hetrec binary data file (starts with 'label\\x09I1'"),
            std::string::npos);
  std::vector<char> newer = bytes;
  store<uint32_t>(newer, 8, 2);
  write_bytes(dir.file("newer.bin"), newer);
  EXPECT_NE(data_error([&] { BinarySource s(dir.file("newer.bin")); })
                .find("newer.bin: format version 2: this build reads version 1"),
            std::string::npos);
  std::vector<char> header_flip = bytes;
  header_flip[40] ^= 0x01;  // a byte of the rows of table 1
  write_bytes(dir.file("header.bin"), header_flip);
  EXPECT_NE(data_error([&] { BinarySource s(dir.file("header.bin")); }).find("header checksum mismatch"),
            std::string::npos);
  EXPECT_THROW(BinarySource(dir.file("missing.bin"), "data.eval_path"), IoError);
}

TEST(BinaryFormat, FlippedByteFailsItsGroupChecksum) {
  TempDir dir;
  std::vector<char> bytes = converted_tsv_bytes(dir, 300, 4);
  const auto offsets = group_offsets(bytes);
  ASSERT_EQ(offsets.size(), 3u);
  bytes[offsets[1] + 24 + 150] ^= 0x10;  // inside group 1's dense columns
  write_bytes(dir.file("flip.bin"), bytes);
  BinarySource source(dir.file("flip.bin"));  // header and trailer are intact
  Batch batch;
  ASSERT_TRUE(source.next(batch, 100));  // group 0 is fine
  const std::string message = data_error([&] { source.next(batch, 100); });
  EXPECT_NE(message.find("flip.bin: row group 1 (samples 100..199): checksum mismatch"), std::string::npos) << message;
  EXPECT_EQ(source.position(), 100);
  source.seek(200);
  EXPECT_TRUE(source.next(batch, 100));  // group 2 is fine
  const std::string report = inspect_binary(dir.file("flip.bin"));
  EXPECT_NE(report.find("checksums: 1 of 3 row groups failed"), std::string::npos) << report;
  EXPECT_NE(report.find("row group 1 (samples 100..199): checksum mismatch"), std::string::npos) << report;
}

TEST(BinaryFormat, OutOfRangeIdsAreNamed) {
  TempDir dir;
  std::vector<char> bytes = converted_tsv_bytes(dir, 250, 5);
  const auto offsets = group_offsets(bytes);
  // Group 2 holds 50 samples: labels (52 padded bytes), 4 dense columns, then table 0's
  // lengths (50 x 4) and ids. Overwrite the id of sample 7 of the group (sample 207) and
  // re-seal the group's checksum so that only the range check can catch it.
  const std::size_t group = offsets[2];
  const std::size_t ids = group + 24 + 52 + 4 * 50 * 4 + 50 * 4;
  store<uint32_t>(bytes, ids + 4 * 7, 1000);
  reseal_group(bytes, group);
  write_bytes(dir.file("range.bin"), bytes);
  BinarySource source(dir.file("range.bin"));
  source.seek(200);
  Batch batch;
  const std::string message = data_error([&] { source.next(batch, 10); });
  EXPECT_NE(message.find("range.bin: row group 2 (samples 200..249), sample 207, table 0: id 1000 outside [0, 1000)"),
            std::string::npos)
      << message;
  // A file whose tables are larger than the model's does not fit the model.
  ModelConfig model;
  model.num_dense = 4;
  model.tables = {hetrec::testing::table("a", 1000), hetrec::testing::table("b", 7),
                  hetrec::testing::table("c", 1000)};
  EXPECT_NE(data_error([&] { BinarySource s(dir.file("a.bin"), model); }).find("model.tables[2] (c).rows = 1000"),
            std::string::npos);
  model.num_dense = 13;
  EXPECT_NE(data_error([&] { BinarySource s(dir.file("a.bin"), model); }).find("4 dense features and 3 tables"),
            std::string::npos);
}

TEST(BinaryFormat, InspectSummarises) {
  TempDir dir;
  hetrec::testing::write_text(dir.file("a.tsv"), random_tsv(1000, 6, false));
  ConvertOptions options;
  options.group_samples = 128;
  convert_tsv_to_binary(dir.file("a.tsv"), dir.file("a.bin"), tsv_layout(), options);
  CriteoTsvSource text(dir.file("a.tsv"), tsv_layout(), OnError::fail);
  double label_sum = 0.0;
  int32_t min_id = 1 << 30, max_id = -1;
  for (const FlatSample& s : read_all(text, 1000)) {
    label_sum += s.label;
    min_id = std::min(min_id, s.bags[0][0]);
    max_id = std::max(max_id, s.bags[0][0]);
  }
  const std::string report = inspect_binary(dir.file("a.bin"));
  for (const std::string& expected :
       {std::string("format: hetrec binary columnar, version 1"), std::string("dense features: 4"),
        std::string("tables: 3 (ids: hash)"), std::string("row groups: 8 of up to 128 samples"),
        std::string("samples: 1000"), fmt::format("label mean: {:.6f}", label_sum / 1000.0),
        fmt::format("table 0: 1000 rows, ids {}..{}, mean bag length 1.000", min_id, max_id),
        std::string("checksums: all 8 row groups ok")})
    EXPECT_NE(report.find(expected), std::string::npos) << "missing '" << expected << "' in\n" << report;
}

TEST(BinaryWriter, RejectsBatchesThatDoNotFit) {
  TempDir dir;
  BinaryHeader header;
  header.num_dense = 2;
  header.rows = {10};
  {
    BinaryWriter writer(dir.file("w.bin"), header);
    Batch batch;
    batch.reset(1, 2, 1);
    batch.ids = {10};
    batch.offsets = {0, 1};
    EXPECT_NE(data_error([&] { writer.append(batch); }).find("sample 0, table 0: id 10 outside [0, 10)"),
              std::string::npos);
    batch.ids = {9};
    batch.labels[0] = 0.5f;
    EXPECT_NE(data_error([&] { writer.append(batch); }).find("expected 0 or 1"), std::string::npos);
    Batch wide;
    wide.reset(1, 3, 1);
    EXPECT_THROW(writer.append(wide), DataError);
    batch.labels[0] = 1.0f;
    writer.append(batch);
    EXPECT_EQ(writer.samples(), 1);
  }
  // The writer went away without finish(): its temporary is gone and nothing was written.
  EXPECT_FALSE(std::filesystem::exists(dir.file("w.bin")));
  for (const auto& e : std::filesystem::directory_iterator(dir.file("")))
    EXPECT_EQ(e.path().filename().string().find("w.bin.tmp-"), std::string::npos) << e.path();
}

// A file whose row groups are several times kMinPieceBytes (4 MiB), so that reading,
// checksumming and decoding run in parallel pieces: with 4 threads it reads back
// exactly as with 1, and as the source that wrote it, at batch sizes that cut groups.
TEST(BinaryFormat, ParallelReadEqualsTheSequentialRead) {
  TempDir dir;
  ModelConfig model;
  model.num_dense = 3;
  for (int t = 0; t < 6; ++t)
    model.tables.push_back(hetrec::testing::table("w" + std::to_string(t), 1000 + 997 * t, 70 + 10 * t, t % 2 == 0));
  SyntheticConfig config;
  config.train_samples = 30000;
  config.seed = 11;
  SyntheticSource source(model, config, Split::train, 2);
  write_synthetic_binary(source, 30000, dir.file("wide.bin"), 12000);  // groups of ~5.8 MB
  source.seek(0);
  const auto expected = read_all(source, 5000);
  BinarySource one(dir.file("wide.bin"), model, "", 1), four(dir.file("wide.bin"), model, "", 4);
  EXPECT_EQ(read_all(one, 7001), expected);
  EXPECT_EQ(read_all(four, 7001), expected);
  // A reused batch of the same shape is rewritten in place, not appended to.
  four.seek(0);
  Batch batch;
  ASSERT_TRUE(four.next(batch, 4000));
  ASSERT_TRUE(four.next(batch, 4000));
  std::vector<FlatSample> second;
  flatten(batch, second);
  EXPECT_EQ(second, std::vector<FlatSample>(expected.begin() + 4000, expected.begin() + 8000));
}

// With several faults in one group, the one first in file order is reported, whatever
// the number of threads: an id out of range in table 0 before a corrupt bag length in
// table 2; the length once the id is repaired.
TEST(BinaryFormat, FirstFaultInFileOrderIsReportedWithAnyThreadCount) {
  TempDir dir;
  std::vector<char> bytes = converted_tsv_bytes(dir, 250, 5);
  const std::size_t group = group_offsets(bytes)[2];  // 50 samples
  // Walk the group: labels (52 padded bytes), 4 dense columns, then per table its 50
  // lengths and its ids.
  std::size_t cursor = group + 24 + 52 + 4 * 50 * 4;
  std::vector<std::size_t> lengths_at, ids_at;
  for (int t = 0; t < 3; ++t) {
    lengths_at.push_back(cursor);
    uint64_t count = 0;
    for (int i = 0; i < 50; ++i) count += load<uint32_t>(bytes, cursor + 4 * static_cast<std::size_t>(i));
    ids_at.push_back(cursor + 200);
    cursor += 200 + 4 * count;
  }
  const uint32_t good_id = load<uint32_t>(bytes, ids_at[0] + 4 * 7);
  store<uint32_t>(bytes, ids_at[0] + 4 * 7, 1000);          // sample 207, table 0: id out of range
  store<uint32_t>(bytes, lengths_at[2] + 4 * 3, 0x80000000u);  // sample 203, table 2: corrupt length
  reseal_group(bytes, group);
  write_bytes(dir.file("two.bin"), bytes);
  store<uint32_t>(bytes, ids_at[0] + 4 * 7, good_id);
  reseal_group(bytes, group);
  write_bytes(dir.file("length.bin"), bytes);
  for (int threads : {1, 4}) {
    Batch batch;
    BinarySource two(dir.file("two.bin"), "", threads);
    two.seek(200);
    std::string message = data_error([&] { two.next(batch, 10); });
    EXPECT_NE(message.find("sample 207, table 0: id 1000 outside [0, 1000)"), std::string::npos)
        << threads << " threads: " << message;
    BinarySource length(dir.file("length.bin"), "", threads);
    length.seek(200);
    message = data_error([&] { length.next(batch, 10); });
    EXPECT_NE(message.find("sample 203, table 2: bag length 2147483648 (corrupt file)"), std::string::npos)
        << threads << " threads: " << message;
  }
}
