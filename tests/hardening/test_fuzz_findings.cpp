// One test per defect the fuzz targets found (docs/reliability.md, "Findings"), each
// reproducing it through the public API with its own inputs. The raw inputs that
// triggered them are replayed by test_fuzz_replay.cpp as well.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "core/checksum.h"
#include "core/error.h"
#include "core/rng.h"
#include "data/binary_format.h"
#include "data/binary_source.h"
#include "data/binary_tools.h"

namespace fs = std::filesystem;
using namespace hetrec;

namespace {

constexpr uint64_t kDataSeed = 0x66696e64;

// A scratch directory for one test, removed afterwards.
class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : path_(fs::temp_directory_path() / ("hetrec_findings_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~Scratch() { fs::remove_all(path_); }
  fs::path operator/(const std::string& file) const { return path_ / file; }

 private:
  fs::path path_;
};

int open_file_descriptors() {
  int count = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// A valid binary file of random samples: 2 dense features, 2 tables, 3 row groups.
std::string valid_binary_file(const fs::path& path) {
  Rng rng(kDataSeed);
  BinaryHeader header;
  header.num_dense = 2;
  header.rows = {11, 5};
  header.group_samples = 4;
  Batch b;
  const int64_t n = 10;
  b.reset(n, header.num_dense, header.num_tables());
  for (auto& y : b.labels) y = static_cast<float>(rng.below(2));
  for (auto& x : b.dense) x = static_cast<float>(rng.normal());
  for (int t = 0; t < header.num_tables(); ++t)
    for (int64_t s = 0; s < n; ++s) {
      const uint64_t length = 1 + rng.below(3);
      for (uint64_t k = 0; k < length; ++k)
        b.ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(header.rows[static_cast<std::size_t>(t)]))));
      b.offsets[static_cast<std::size_t>(t * n + s + 1)] = static_cast<int32_t>(b.ids.size());
    }
  BinaryWriter writer(path.string(), header);
  writer.append(b);
  writer.finish();
  return read_bytes(path);
}

}  // namespace

// Finding 1 (binary_file target): BinaryFile's constructor opened the file, then threw
// on a rejected header or trailer without closing it (a constructor that throws runs no
// destructor), so every rejected file leaked a file descriptor and its FILE buffer; a
// long-running process checking many bad files would run out of descriptors.
TEST(FuzzFindings, RejectedBinaryFilesAreClosed) {
  const Scratch dir("closed");
  const fs::path good = dir / "good.hbin", bad = dir / "bad.hbin";
  const std::string bytes = valid_binary_file(good);
  ASSERT_GT(bytes.size(), 100u);

  struct Damage {
    const char* what;
    std::string bytes;
  };
  std::string bad_magic = bytes, bad_header_crc = bytes, bad_trailer = bytes;
  bad_magic[0] = 'X';
  bad_header_crc[13] = static_cast<char>(bad_header_crc[13] ^ 0x40);  // num_dense, under the header CRC
  bad_trailer[bytes.size() - 20] = static_cast<char>(bad_trailer[bytes.size() - 20] ^ 0x01);  // group count
  const Damage damages[] = {
      {"foreign file", bad_magic},
      {"short header", bytes.substr(0, 20)},
      {"header checksum", bad_header_crc},
      {"no trailer", bytes.substr(0, bytes.size() - 3)},
      {"corrupt trailer", bad_trailer},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.what);
    write_bytes(bad, d.bytes);
    const int before = open_file_descriptors();
    try {
      BinaryFile file(bad.string());
      ADD_FAILURE() << "accepted";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
    }
    EXPECT_THROW(BinarySource source(bad.string()), DataError);
    EXPECT_THROW(inspect_binary(bad.string()), DataError);
    EXPECT_EQ(open_file_descriptors(), before) << "a rejected file was left open";
  }
  // The undamaged file still opens, and closes with its reader.
  const int before = open_file_descriptors();
  {
    BinarySource source(good.string());
    EXPECT_EQ(source.size_hint(), 10);
    EXPECT_EQ(open_file_descriptors(), before + 1);
  }
  EXPECT_EQ(open_file_descriptors(), before);
}

// Finding 2 (binary_file target, UndefinedBehaviorSanitizer): a row group in which every
// bag of a table is empty (valid: variable-length bags may be empty) made read_group
// call memcpy with the null data() of an empty vector, undefined behaviour even for zero
// bytes. Fails only under the sanitizer job, which aborts on it.
TEST(FuzzFindings, GroupWithoutIdsForATableReadsBack) {
  const Scratch dir("empty");
  const fs::path path = dir / "empty_bags.hbin";
  Rng rng(kDataSeed + 1);
  BinaryHeader header;
  header.num_dense = 1;
  header.rows = {7, 3};
  header.group_samples = 2;
  const int64_t n = 5;
  Batch b;
  b.reset(n, header.num_dense, header.num_tables());
  for (auto& y : b.labels) y = static_cast<float>(rng.below(2));
  for (auto& x : b.dense) x = static_cast<float>(rng.normal());
  std::vector<int32_t> expected_ids;  // table 0 only: table 1's bags are all empty
  for (int64_t s = 0; s < n; ++s) {
    expected_ids.push_back(static_cast<int32_t>(rng.below(7)));
    b.ids.push_back(expected_ids.back());
    b.offsets[static_cast<std::size_t>(s + 1)] = static_cast<int32_t>(b.ids.size());
  }
  for (int64_t s = 0; s < n; ++s) b.offsets[static_cast<std::size_t>(n + s + 1)] = static_cast<int32_t>(b.ids.size());
  {
    BinaryWriter writer(path.string(), header);
    writer.append(b);
    writer.finish();
  }
  BinarySource source(path.string());
  Batch got;
  got.ids.assign(1, -1);  // poison: must be replaced
  ASSERT_TRUE(source.next(got, n));
  EXPECT_EQ(got.size, n);
  EXPECT_EQ(got.ids, expected_ids);
  EXPECT_EQ(got.labels, b.labels);
  EXPECT_EQ(got.dense, b.dense);
  for (int64_t s = 0; s < n; ++s) EXPECT_EQ(got.bag_end(1, s) - got.bag_begin(1, s), 0);
  EXPECT_NE(inspect_binary(path.string()).find("all 3 row groups ok"), std::string::npos);
}

// Finding 3 (binary_file target, UndefinedBehaviorSanitizer: signed overflow): the
// trailer check `offset + 28 > index_offset` added to a row-group offset read from the
// file; an offset near 2^63 overflowed, and where the overflow wraps the group passed as
// "in place" and read_group later sized a buffer from it. A corrupt offset must be
// reported as such, whatever its value.
TEST(FuzzFindings, HugeRowGroupOffsetIsACorruptTrailer) {
  const Scratch dir("offset");
  const fs::path good = dir / "good.hbin", bad = dir / "bad.hbin";
  const std::string bytes = valid_binary_file(good);
  // Trailer layout (docs/data_format.md): G offsets, S, G, CRC of those, reserved, marker.
  constexpr std::size_t kTrailerTail = 32, kCrcFromEnd = 16;
  uint64_t groups = 0;
  std::memcpy(&groups, bytes.data() + bytes.size() - 24, 8);
  ASSERT_EQ(groups, 3u);
  const std::size_t index = bytes.size() - kTrailerTail - 8 * groups;
  for (const uint64_t offset : {uint64_t{0x7ffffffffffffff7}, uint64_t{0x8000000000000005}, ~uint64_t{0}}) {
    SCOPED_TRACE(offset);
    std::string damaged = bytes;
    std::memcpy(damaged.data() + index + 8, &offset, 8);  // group 1
    const uint32_t crc = crc32c(damaged.data() + index, damaged.size() - kCrcFromEnd - index);
    std::memcpy(damaged.data() + damaged.size() - kCrcFromEnd, &crc, 4);  // a valid trailer CRC
    write_bytes(bad, damaged);
    try {
      BinarySource source(bad.string());
      ADD_FAILURE() << "accepted";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("row group 1 at offset"), std::string::npos) << e.what();
    }
  }
}

// The DataError that reading the first batch (4 samples) of a binary file raises; a test
// failure, and an empty message, when the file is accepted.
std::string first_batch_error(const fs::path& file) {
  BinarySource source(file.string());
  Batch batch;
  try {
    source.next(batch, 4);
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << file << " accepted";
  return "";
}

// The same overflow, found by reading the code after finding 3: a row group's recorded
// payload size was added to before the group's checksum was checked, so a single
// corrupted field (no forged checksum needed) near 2^63 overflowed.
TEST(FuzzFindings, HugeRecordedPayloadIsACorruptGroup) {
  const Scratch dir("payload");
  const fs::path good = dir / "good.hbin", bad = dir / "bad.hbin";
  std::string bytes = valid_binary_file(good);
  // Group 0 starts right after the header (32 + 8 x 2 tables + 4 bytes); its payload size
  // is the u64 at byte 16 of the group header.
  constexpr std::size_t kGroup0 = 32 + 8 * 2 + 4, kPayloadField = 16;
  const uint64_t payload = 0x7ffffffffffffff0;
  std::memcpy(bytes.data() + kGroup0 + kPayloadField, &payload, 8);
  write_bytes(bad, bytes);
  const std::string error = first_batch_error(bad);
  EXPECT_NE(error.find("row group 0"), std::string::npos) << error;
  EXPECT_NE(error.find("payload bytes recorded"), std::string::npos) << error;
}

// Finding 4: a row group whose recorded first sample was near 2^63 (with its checksum made
// to match) overflowed in the error message that reports the wrong range: it added the
// group's sample count to the value from the file. Any first sample must be reported as a
// data error naming the group.
TEST(FuzzFindings, HugeFirstSampleOfAGroupIsReportedWithoutOverflow) {
  const Scratch dir("first");
  const fs::path good = dir / "good.hbin", bad = dir / "bad.hbin";
  const std::string bytes = valid_binary_file(good);
  // Group 0 starts right after the header (32 + 8 x 2 tables + 4 bytes); its first sample
  // is the u64 at byte 8 of the group header, its CRC the last 4 bytes before group 1.
  constexpr std::size_t kGroup0 = 32 + 8 * 2 + 4, kFirstField = 8, kTrailerTail = 32;
  uint64_t groups = 0, group1 = 0;
  std::memcpy(&groups, bytes.data() + bytes.size() - 24, 8);
  ASSERT_EQ(groups, 3u);
  std::memcpy(&group1, bytes.data() + bytes.size() - kTrailerTail - 8 * groups + 8, 8);
  for (const uint64_t first : {uint64_t{0x7ffffffffffffffe}, uint64_t{0x7fffffffffffffff}, ~uint64_t{0}}) {
    SCOPED_TRACE(first);
    std::string damaged = bytes;
    std::memcpy(damaged.data() + kGroup0 + kFirstField, &first, 8);
    const uint32_t crc = crc32c(damaged.data() + kGroup0, group1 - 4 - kGroup0);
    std::memcpy(damaged.data() + group1 - 4, &crc, 4);  // a valid group checksum
    write_bytes(bad, damaged);
    const std::string error = first_batch_error(bad);
    EXPECT_NE(error.find("row group 0 (samples 0..3): holds 4 samples from sample "), std::string::npos) << error;
    EXPECT_NE(error.find("expected"), std::string::npos) << error;
  }
}

