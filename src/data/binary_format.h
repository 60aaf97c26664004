#pragma once
// The hetrec binary columnar data format (specification: docs/data_format.md): a
// header, row groups of up to `group_samples` samples stored column by column, each
// with its own CRC-32C, and a trailer indexing the groups. Ids are stored as final row
// ids (the categorical mapping is applied when the file is written), so a reader does
// no hashing; bags may hold any number of ids (multi-hot, variable length).
//
// This file holds the format itself: its constants, the writer, and the validating
// reader of headers, trailers and groups shared by BinarySource and inspect_binary.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/exclusive_file.h"
#include "data/batch.h"

namespace hetrec::inline data {

inline constexpr char kBinaryMagic[8] = {'H', 'R', 'E', 'C', 'D', 'A', 'T', 'A'};
inline constexpr char kBinaryEndMagic[8] = {'H', 'R', 'E', 'C', 'T', 'A', 'I', 'L'};
inline constexpr char kRowGroupMagic[4] = {'R', 'G', 'R', 'P'};
inline constexpr uint32_t kBinaryVersion = 1;
// Samples per row group: 64Ki keeps a group of the reference workload (214 ids a
// sample) near 60 MB, and the group index of a 4-billion-sample file near 0.5 MB.
inline constexpr int64_t kDefaultGroupSamples = 65536;
// Bytes: the fixed part of the header (before the per-table rows), a group's header,
// and the fixed tail of the trailer (counts, checksum, end magic).
inline constexpr int64_t kHeaderFixedBytes = 32;
inline constexpr int64_t kGroupHeaderBytes = 24;
inline constexpr int64_t kTrailerTailBytes = 32;

// How the stored ids were derived from the raw data (informational).
enum class IdMapping : uint32_t { generated = 0, modulo = 1, hash = 2 };
const char* id_mapping_name(IdMapping mapping);

struct BinaryHeader {
  uint32_t version = kBinaryVersion;
  int num_dense = 0;
  std::vector<int64_t> rows;  // per table: every stored id is in [0, rows)
  int64_t group_samples = kDefaultGroupSamples;
  IdMapping mapping = IdMapping::generated;

  int num_tables() const { return static_cast<int>(rows.size()); }
  int64_t bytes() const { return kHeaderFixedBytes + 8 * static_cast<int64_t>(rows.size()) + 4; }
};

// One decoded row group, laid out for batch assembly.
struct RowGroup {
  int64_t index = -1;
  int64_t first_sample = 0;
  int64_t size = 0;
  std::vector<float> labels;                    // size
  std::vector<float> dense;                     // size x num_dense, row-major
  std::vector<std::vector<int32_t>> lengths;    // per table, size bag lengths
  std::vector<std::vector<int64_t>> bag_begin;  // per table, size + 1 prefix offsets into ids
  std::vector<std::vector<int32_t>> ids;        // per table
};

// A file a command reads while it writes a binary file ("--input", "train.tsv").
struct NamedPath {
  std::string what;
  std::string path;
};

// The checks made before a binary file is written, before anything is created: throws
// ConfigError naming the path when `output` exists and is not a regular file (a
// directory, a device node, a FIFO), or is the same file as one of `inputs` (same
// device and inode, whatever the path, symbolic or hard link that leads there). Nothing
// is opened or created.
void check_binary_output(const std::string& output, const std::vector<NamedPath>& inputs = {});

// Streams samples into a file in constant memory (one row group is staged). The file is
// written to the temporary "<path>.tmp-<pid>" beside `path` (core/exclusive_file.h) and
// renamed over `path` only by finish(): until then `path` is never opened, truncated or
// removed, and whatever happens, a reader sees the old file or the finished new one.
class BinaryWriter {
 public:
  // Checks `path` (check_binary_output), creates the temporary and writes the header.
  // Throws ConfigError (a bad header, an output that is not a regular file) or IoError.
  BinaryWriter(std::string path, BinaryHeader header);
  // Without finish(), removes the temporary: `path` stays as it was.
  ~BinaryWriter();
  BinaryWriter(const BinaryWriter&) = delete;
  BinaryWriter& operator=(const BinaryWriter&) = delete;

  // Appends every sample of `batch`. Throws DataError when its shape differs from the
  // header or an id is outside its table.
  void append(const Batch& batch);
  // Writes the last group and the trailer, syncs the temporary to disk and renames it
  // over `path`. Throws IoError (the temporary is then removed, `path` untouched).
  void finish();

  int64_t samples() const { return samples_; }
  int64_t groups() const { return static_cast<int64_t>(group_offsets_.size()); }
  int64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  void write_bytes(const void* data, std::size_t size);
  void flush_group();

  std::string path_;
  BinaryHeader header_;
  std::unique_ptr<ExclusiveFile> file_;
  int64_t samples_ = 0;
  int64_t bytes_ = 0;
  std::vector<uint64_t> group_offsets_;
  // The staged group: labels, dense columns (column j at [j * group_samples]), bags.
  int64_t staged_ = 0;
  std::vector<uint8_t> labels_;
  std::vector<float> dense_columns_;
  std::vector<std::vector<uint32_t>> lengths_, ids_;
  std::vector<char> payload_;
};

// An opened binary file whose header and trailer have been validated. Throws DataError
// naming the file for a foreign file (bad magic), another version, a truncated file
// (short header, missing trailer) or a corrupt header or index; IoError when it cannot
// be read.
class BinaryFile {
 public:
  explicit BinaryFile(std::string path, const std::string& what = "");
  ~BinaryFile();
  BinaryFile(const BinaryFile&) = delete;
  BinaryFile& operator=(const BinaryFile&) = delete;

  const BinaryHeader& header() const { return header_; }
  int64_t samples() const { return samples_; }
  int64_t groups() const { return static_cast<int64_t>(group_offsets_.size()); }
  int64_t file_bytes() const { return file_bytes_; }
  const std::string& path() const { return path_; }
  // Bytes of row group g in the file (its header, payload and checksum).
  int64_t group_bytes(int64_t g) const;

  // Reads, checks (CRC-32C, sizes, labels in {0,1}, finite dense values, ids in range)
  // and decodes group g. Throws DataError naming the file, the group and, for a bad
  // value, the sample and table (the first bad value in file order). `threads` read,
  // checksum and decode the tables in parallel.
  void read_group(int64_t g, RowGroup& out, int threads = 1);

  // Checks group g's frame without decoding it: marker, recorded payload size, CRC-32C,
  // sample count and first sample, the checks read_group makes first, with the same
  // DataError. Reads in pieces of at most 4 MiB into `scratch` by positioned reads, so
  // it may run on another thread while read_group runs (and uses no other state).
  void check_group(int64_t g, std::vector<char>& scratch) const;

 private:
  void read_at(int64_t offset, void* data, std::size_t size);
  // The same in pieces read by `threads` threads (positioned reads of the descriptor).
  void read_at_parallel(int64_t offset, char* data, std::size_t size, int threads) const;
  // Positioned read of [offset, offset + size): the error message, empty on success.
  std::string pread_range(int64_t offset, char* data, std::size_t size) const;
  std::string group_name(int64_t g) const;
  // The checks of a group's 24-byte header against its size in the file (marker,
  // payload size), then of its stored and computed CRC and its sample range.
  void check_group_head(int64_t g, const char* head, int64_t bytes) const;
  void check_group_seal(int64_t g, const char* head, uint32_t stored, uint32_t computed) const;

  std::string path_;
  std::FILE* file_ = nullptr;
  int64_t file_bytes_ = 0;
  BinaryHeader header_;
  int64_t samples_ = 0;
  int64_t index_offset_ = 0;
  std::vector<uint64_t> group_offsets_;
  std::vector<char> buffer_;
};

}  // namespace hetrec::data::data
