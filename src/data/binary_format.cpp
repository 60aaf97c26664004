#include "data/binary_format.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>
#include <utility>

#include <fmt/format.h>

#include "core/checksum.h"
#include "core/error.h"
#include "core/exclusive_file.h"
#include "data/chunked_work.h"

namespace hetrec::inline data {

// The format is little-endian; values are copied as they are in memory.
static_assert(std::endian::native == std::endian::little, "the binary data format assumes a little-endian host");

namespace {

// Sanity bounds on header fields, checked before they size any allocation.
constexpr int64_t kMaxTables = 1 << 16;
constexpr int64_t kMaxDense = 1 << 16;

template <class T>
void put(std::vector<char>& out, T value) {
  const std::size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

template <class T>
void put_at(char* out, T value) {
  std::memcpy(out, &value, sizeof(T));
}

template <class T>
T get(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

std::string printable(const char* bytes, std::size_t size) {
  std::string out;
  for (std::size_t i = 0; i < size; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    out += (c >= 0x20 && c < 0x7f) ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02x}", c);
  }
  return out;
}

int64_t padded_to_4(int64_t bytes) { return (bytes + 3) / 4 * 4; }

// A group is read and checksummed in pieces of at least this size, one per reader
// thread at most: below it a thread costs more to start than it saves. check_group
// reads pieces of this size too, so it holds no more than this of a group at a time.
constexpr std::size_t kMinPieceBytes = std::size_t{4} << 20;

std::size_t piece_count(std::size_t size, int threads) {
  return std::max<std::size_t>(1, std::min(static_cast<std::size_t>(std::max(threads, 1)), size / kMinPieceBytes));
}

// CRC-32C of a buffer computed in pieces on `threads` threads, then combined.
uint32_t crc32c_parallel(const char* data, std::size_t size, int threads) {
  const std::size_t pieces = piece_count(size, threads);
  if (pieces <= 1) return crc32c(data, size);
  std::vector<uint32_t> crcs(pieces);
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (std::size_t k = 0; k < pieces; ++k) {
    const std::size_t from = size * k / pieces, to = size * (k + 1) / pieces;
    crcs[k] = crc32c(data + from, to - from);
  }
  uint32_t crc = crcs[0];
  for (std::size_t k = 1; k < pieces; ++k)
    crc = crc32c_combine(crc, crcs[k], size * (k + 1) / pieces - size * k / pieces);
  return crc;
}

void validate_header(const BinaryHeader& h, const std::string& path) {
  if (h.num_dense < 0 || h.num_dense > kMaxDense)
    throw ConfigError(fmt::format("{}: {} dense features: expected 0 to {}", path, h.num_dense, kMaxDense));
  if (h.num_tables() > kMaxTables)
    throw ConfigError(fmt::format("{}: {} tables: expected at most {}", path, h.num_tables(), kMaxTables));
  for (int t = 0; t < h.num_tables(); ++t)
    if (h.rows[static_cast<std::size_t>(t)] < 1 || h.rows[static_cast<std::size_t>(t)] > std::numeric_limits<int32_t>::max())
      throw ConfigError(fmt::format("{}: table {} has {} rows: expected 1 to 2^31-1", path, t,
                                    h.rows[static_cast<std::size_t>(t)]));
  if (h.group_samples < 1 || h.group_samples > std::numeric_limits<int32_t>::max())
    throw ConfigError(fmt::format("{}: {} samples per row group: expected 1 to 2^31-1", path, h.group_samples));
}

// What kind of file a stat(2) mode describes, for the message refusing to replace it.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

void check_binary_output(const std::string& output, const std::vector<NamedPath>& inputs) {
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // nothing there (or not reachable: creating the temporary says why)
  if (!S_ISREG(out.st_mode))
    throw ConfigError(fmt::format("{}: the output exists and is {}: refusing to replace it with a data file; "
                                  "nothing was written",
                                  output, file_kind(out.st_mode)));
  for (const NamedPath& input : inputs) {
    struct stat in {};
    if (::stat(input.path.c_str(), &in) != 0) continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw ConfigError(fmt::format("{}: the output is the same file as {} '{}': refusing to write over the file "
                                    "being read; nothing was written",
                                    output, input.what, input.path));
  }
}

const char* id_mapping_name(IdMapping mapping) {
  switch (mapping) {
    case IdMapping::generated: return "generated";
    case IdMapping::modulo: return "modulo";
    case IdMapping::hash: return "hash";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------- writer

BinaryWriter::BinaryWriter(std::string path, BinaryHeader header) : path_(std::move(path)), header_(std::move(header)) {
  header_.version = kBinaryVersion;
  validate_header(header_, path_);
  const auto gs = static_cast<std::size_t>(header_.group_samples);
  labels_.resize(gs);
  dense_columns_.resize(gs * static_cast<std::size_t>(header_.num_dense));
  lengths_.resize(static_cast<std::size_t>(header_.num_tables()));
  ids_.resize(static_cast<std::size_t>(header_.num_tables()));

  check_binary_output(path_);
  file_ = std::make_unique<ExclusiveFile>(path_);
  std::vector<char> bytes;
  bytes.insert(bytes.end(), kBinaryMagic, kBinaryMagic + sizeof(kBinaryMagic));
  put<uint32_t>(bytes, header_.version);
  put<uint32_t>(bytes, static_cast<uint32_t>(header_.num_dense));
  put<uint32_t>(bytes, static_cast<uint32_t>(header_.num_tables()));
  put<uint32_t>(bytes, static_cast<uint32_t>(header_.group_samples));
  put<uint32_t>(bytes, static_cast<uint32_t>(header_.mapping));
  put<uint32_t>(bytes, 0);  // reserved
  for (int64_t rows : header_.rows) put<uint64_t>(bytes, static_cast<uint64_t>(rows));
  put<uint32_t>(bytes, crc32c(bytes.data(), bytes.size()));
  HETREC_CHECK(static_cast<int64_t>(bytes.size()) == header_.bytes(), "binary header size");
  write_bytes(bytes.data(), bytes.size());
}

BinaryWriter::~BinaryWriter() = default;  // an unfinished temporary is removed with file_

void BinaryWriter::write_bytes(const void* data, std::size_t size) {
  if (file_ == nullptr) throw InternalError(path_ + ": write after finish()");
  try {
    file_->write(data, size);
  } catch (const IoError& e) {
    throw IoError(fmt::format("{}: write failed after {} bytes ({}); the unfinished temporary file is removed, {} "
                              "is untouched",
                              path_, bytes_, e.what(), path_));
  }
  bytes_ += static_cast<int64_t>(size);
}

void BinaryWriter::append(const Batch& batch) {
  if (batch.num_dense != header_.num_dense || batch.num_tables != header_.num_tables())
    throw DataError(fmt::format("{}: a batch with {} dense features and {} tables does not fit a file of {} and {}",
                                path_, batch.num_dense, batch.num_tables, header_.num_dense, header_.num_tables()));
  const auto gs = static_cast<std::size_t>(header_.group_samples);
  for (int64_t b = 0; b < batch.size; ++b) {
    const float label = batch.labels[static_cast<std::size_t>(b)];
    if (label != 0.0f && label != 1.0f)
      throw DataError(fmt::format("{}: sample {}: label {}: expected 0 or 1", path_, batch.first_sample + b, label));
    const auto slot = static_cast<std::size_t>(staged_);
    labels_[slot] = label == 1.0f ? 1 : 0;
    for (int j = 0; j < header_.num_dense; ++j)
      dense_columns_[static_cast<std::size_t>(j) * gs + slot] =
          batch.dense[static_cast<std::size_t>(b * header_.num_dense + j)];
    for (int t = 0; t < header_.num_tables(); ++t) {
      const auto st = static_cast<std::size_t>(t);
      const int64_t begin = batch.bag_begin(t, b), end = batch.bag_end(t, b);
      for (int64_t k = begin; k < end; ++k) {
        const int32_t id = batch.ids[static_cast<std::size_t>(k)];
        if (id < 0 || id >= header_.rows[st])
          throw DataError(fmt::format("{}: sample {}, table {}: id {} outside [0, {})", path_, batch.first_sample + b,
                                      t, id, header_.rows[st]));
        ids_[st].push_back(static_cast<uint32_t>(id));
      }
      lengths_[st].push_back(static_cast<uint32_t>(end - begin));
    }
    ++staged_;
    ++samples_;
    if (staged_ == header_.group_samples) flush_group();
  }
}

void BinaryWriter::flush_group() {
  if (staged_ == 0) return;
  const auto n = static_cast<std::size_t>(staged_);
  const auto gs = static_cast<std::size_t>(header_.group_samples);
  payload_.clear();
  payload_.insert(payload_.end(), reinterpret_cast<const char*>(labels_.data()),
                  reinterpret_cast<const char*>(labels_.data()) + n);
  payload_.resize(static_cast<std::size_t>(padded_to_4(staged_)), 0);
  for (int j = 0; j < header_.num_dense; ++j) {
    const auto* column = reinterpret_cast<const char*>(dense_columns_.data() + static_cast<std::size_t>(j) * gs);
    payload_.insert(payload_.end(), column, column + n * sizeof(float));
  }
  for (int t = 0; t < header_.num_tables(); ++t) {
    const auto& lengths = lengths_[static_cast<std::size_t>(t)];
    const auto& ids = ids_[static_cast<std::size_t>(t)];
    payload_.insert(payload_.end(), reinterpret_cast<const char*>(lengths.data()),
                    reinterpret_cast<const char*>(lengths.data() + lengths.size()));
    payload_.insert(payload_.end(), reinterpret_cast<const char*>(ids.data()),
                    reinterpret_cast<const char*>(ids.data() + ids.size()));
  }
  char head[kGroupHeaderBytes];
  std::memcpy(head, kRowGroupMagic, sizeof(kRowGroupMagic));
  put_at<uint32_t>(head + 4, static_cast<uint32_t>(staged_));
  put_at<uint64_t>(head + 8, static_cast<uint64_t>(samples_ - staged_));
  put_at<uint64_t>(head + 16, static_cast<uint64_t>(payload_.size()));
  uint32_t crc = crc32c(head, sizeof(head));
  crc = crc32c(payload_.data(), payload_.size(), crc);
  group_offsets_.push_back(static_cast<uint64_t>(bytes_));
  write_bytes(head, sizeof(head));
  write_bytes(payload_.data(), payload_.size());
  write_bytes(&crc, sizeof(crc));
  staged_ = 0;
  for (auto& v : lengths_) v.clear();
  for (auto& v : ids_) v.clear();
}

void BinaryWriter::finish() {
  flush_group();
  std::vector<char> trailer;
  for (uint64_t offset : group_offsets_) put<uint64_t>(trailer, offset);
  put<uint64_t>(trailer, static_cast<uint64_t>(samples_));
  put<uint64_t>(trailer, static_cast<uint64_t>(group_offsets_.size()));
  put<uint32_t>(trailer, crc32c(trailer.data(), trailer.size()));
  put<uint32_t>(trailer, 0);  // reserved
  trailer.insert(trailer.end(), kBinaryEndMagic, kBinaryEndMagic + sizeof(kBinaryEndMagic));
  write_bytes(trailer.data(), trailer.size());
  const std::unique_ptr<ExclusiveFile> file = std::move(file_);
  file->commit();  // on failure the temporary goes with `file`
}

// ---------------------------------------------------------------------------- reader

BinaryFile::BinaryFile(std::string path, const std::string& what) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "rb");
  if (file_ == nullptr)
    throw IoError(path_ + ": cannot open for reading" + (what.empty() ? "" : " (" + what + ")") + ": " +
                  std::strerror(errno));
  // The destructor does not run when the constructor throws: close the file then too.
  struct CloseUnlessKept {
    std::FILE*& file;
    bool keep = false;
    ~CloseUnlessKept() {
      if (!keep) std::fclose(std::exchange(file, nullptr));
    }
  } close_on_error{file_};
  if (fseeko(file_, 0, SEEK_END) != 0 || (file_bytes_ = ftello(file_)) < 0)
    throw IoError(fmt::format("{}: cannot determine the file size: {}", path_, std::strerror(errno)));

  // Magic and version first, so a foreign or newer file is named as such.
  char fixed[kHeaderFixedBytes] = {};
  const auto have = static_cast<std::size_t>(std::min<int64_t>(file_bytes_, kHeaderFixedBytes));
  read_at(0, fixed, have);
  const std::size_t magic_have = std::min(have, sizeof(kBinaryMagic));
  if (std::memcmp(fixed, kBinaryMagic, magic_have) != 0)
    throw DataError(fmt::format("{}: not a hetrec binary data file (starts with '{}', expected '{}')", path_,
                                printable(fixed, magic_have), printable(kBinaryMagic, sizeof(kBinaryMagic))));
  if (file_bytes_ < kHeaderFixedBytes)
    throw DataError(fmt::format("{}: truncated: {} bytes, shorter than the {}-byte header", path_, file_bytes_,
                                kHeaderFixedBytes));
  header_.version = get<uint32_t>(fixed + 8);
  if (header_.version != kBinaryVersion)
    throw DataError(fmt::format("{}: format version {}: this build reads version {}", path_, header_.version,
                                kBinaryVersion));
  header_.num_dense = static_cast<int>(get<uint32_t>(fixed + 12));
  const uint32_t tables = get<uint32_t>(fixed + 16);
  header_.group_samples = get<uint32_t>(fixed + 20);
  header_.mapping = static_cast<IdMapping>(get<uint32_t>(fixed + 24));
  if (tables > kMaxTables)
    throw DataError(fmt::format("{}: corrupt header: {} tables", path_, tables));
  const int64_t header_bytes = kHeaderFixedBytes + 8 * static_cast<int64_t>(tables) + 4;
  if (file_bytes_ < header_bytes)
    throw DataError(fmt::format("{}: truncated: {} bytes, shorter than the {}-byte header", path_, file_bytes_,
                                header_bytes));
  std::vector<char> bytes(static_cast<std::size_t>(header_bytes));
  read_at(0, bytes.data(), bytes.size());
  const uint32_t stored = get<uint32_t>(bytes.data() + header_bytes - 4);
  const uint32_t computed = crc32c(bytes.data(), bytes.size() - 4);
  if (stored != computed)
    throw DataError(fmt::format("{}: header checksum mismatch (stored {:#010x}, computed {:#010x})", path_, stored,
                                computed));
  for (uint32_t t = 0; t < tables; ++t)
    header_.rows.push_back(static_cast<int64_t>(get<uint64_t>(bytes.data() + kHeaderFixedBytes + 8 * t)));
  try {
    validate_header(header_, path_);
  } catch (const ConfigError& e) {
    throw DataError(std::string("corrupt header: ") + e.what());
  }

  // Trailer: ... group offsets, sample count, group count, CRC, reserved, end magic.
  const std::string truncated = fmt::format(
      "{}: truncated: no trailer at the end of the file (it was cut short, or its writer did not finish)", path_);
  if (file_bytes_ < header_bytes + kTrailerTailBytes) throw DataError(truncated);
  char tail[kTrailerTailBytes];
  read_at(file_bytes_ - kTrailerTailBytes, tail, sizeof(tail));
  if (std::memcmp(tail + 24, kBinaryEndMagic, sizeof(kBinaryEndMagic)) != 0) throw DataError(truncated);
  samples_ = static_cast<int64_t>(get<uint64_t>(tail));
  const uint64_t groups = get<uint64_t>(tail + 8);
  const uint32_t stored_index_crc = get<uint32_t>(tail + 16);
  const int64_t room = (file_bytes_ - header_bytes - kTrailerTailBytes) / 8;
  if (groups > static_cast<uint64_t>(room))
    throw DataError(fmt::format("{}: corrupt trailer: {} row groups cannot fit in {} bytes", path_, groups, file_bytes_));
  index_offset_ = file_bytes_ - kTrailerTailBytes - 8 * static_cast<int64_t>(groups);
  std::vector<char> index(static_cast<std::size_t>(8 * groups + 16));
  read_at(index_offset_, index.data(), index.size());
  const uint32_t index_crc = crc32c(index.data(), index.size());
  if (index_crc != stored_index_crc)
    throw DataError(fmt::format("{}: trailer checksum mismatch (stored {:#010x}, computed {:#010x})", path_,
                                stored_index_crc, index_crc));
  group_offsets_.resize(groups);
  for (uint64_t g = 0; g < groups; ++g) group_offsets_[g] = get<uint64_t>(index.data() + 8 * g);

  const auto gs = header_.group_samples;
  const auto g_count = static_cast<int64_t>(groups);
  const bool counts_ok = g_count == 0 ? samples_ == 0 : samples_ > (g_count - 1) * gs && samples_ <= g_count * gs;
  if (!counts_ok)
    throw DataError(fmt::format("{}: corrupt trailer: {} samples do not fill {} row groups of up to {}", path_,
                                samples_, g_count, gs));
  for (int64_t g = 0; g < g_count; ++g) {
    const auto offset = static_cast<int64_t>(group_offsets_[static_cast<std::size_t>(g)]);
    const int64_t lower = g == 0 ? header_bytes : static_cast<int64_t>(group_offsets_[static_cast<std::size_t>(g - 1)]) + kGroupHeaderBytes + 4;
    // offset comes from the file: compare without adding to it, which could overflow.
    if ((g == 0 && offset != header_bytes) || offset < lower || offset > index_offset_ - kGroupHeaderBytes - 4)
      throw DataError(fmt::format("{}: corrupt trailer: row group {} at offset {} is out of place", path_, g, offset));
  }
  close_on_error.keep = true;
}

BinaryFile::~BinaryFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void BinaryFile::read_at(int64_t offset, void* data, std::size_t size) {
  if (fseeko(file_, offset, SEEK_SET) != 0)
    throw IoError(fmt::format("{}: cannot seek to byte {}: {}", path_, offset, std::strerror(errno)));
  if (std::fread(data, 1, size, file_) != size)
    throw IoError(fmt::format("{}: cannot read {} bytes at byte {}: {}", path_, size, offset,
                              std::ferror(file_) ? std::strerror(errno) : "unexpected end of file"));
}

std::string BinaryFile::pread_range(int64_t offset, char* data, std::size_t size) const {
  const int fd = fileno(file_);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got = pread(fd, data + done, size - done, static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (got > 0) {
      done += static_cast<std::size_t>(got);
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else {
      return fmt::format("{}: cannot read {} bytes at byte {}: {}", path_, size - done,
                         offset + static_cast<int64_t>(done), got < 0 ? std::strerror(errno) : "unexpected end of file");
    }
  }
  return {};
}

void BinaryFile::read_at_parallel(int64_t offset, char* data, std::size_t size, int threads) const {
  const std::size_t pieces = piece_count(size, threads);
  std::vector<std::string> errors(pieces);
#pragma omp parallel for num_threads(threads) schedule(static, 1) if (pieces > 1)
  for (std::size_t k = 0; k < pieces; ++k) {
    const std::size_t from = size * k / pieces, to = size * (k + 1) / pieces;
    errors[k] = pread_range(offset + static_cast<int64_t>(from), data + from, to - from);
  }
  for (const std::string& e : errors)
    if (!e.empty()) throw IoError(e);
}

int64_t BinaryFile::group_bytes(int64_t g) const {
  HETREC_CHECK(g >= 0 && g < groups(), "row group index out of range");
  const auto sg = static_cast<std::size_t>(g);
  const int64_t end = g + 1 < groups() ? static_cast<int64_t>(group_offsets_[sg + 1]) : index_offset_;
  return end - static_cast<int64_t>(group_offsets_[sg]);
}

std::string BinaryFile::group_name(int64_t g) const {
  const int64_t first = g * header_.group_samples;
  const int64_t last = std::min(samples_, first + header_.group_samples) - 1;
  return fmt::format("{}: row group {} (samples {}..{})", path_, g, first, last);
}

void BinaryFile::check_group_head(int64_t g, const char* head, int64_t bytes) const {
  if (std::memcmp(head, kRowGroupMagic, sizeof(kRowGroupMagic)) != 0)
    throw DataError(fmt::format("{}: bad row group marker '{}' (corrupt file)", group_name(g),
                                printable(head, sizeof(kRowGroupMagic))));
  const auto payload = static_cast<int64_t>(get<uint64_t>(head + 16));
  if (payload != bytes - kGroupHeaderBytes - 4)  // payload comes from the file: adding to it could overflow
    throw DataError(fmt::format("{}: {} payload bytes recorded, {} stored (corrupt file)", group_name(g), payload,
                                bytes - kGroupHeaderBytes - 4));
}

void BinaryFile::check_group_seal(int64_t g, const char* head, uint32_t stored, uint32_t computed) const {
  if (stored != computed)
    throw DataError(fmt::format("{}: checksum mismatch (stored {:#010x}, computed {:#010x})", group_name(g), stored,
                                computed));
  const int64_t n = get<uint32_t>(head + 4);
  const auto first = static_cast<int64_t>(get<uint64_t>(head + 8));
  const int64_t expected_n = g + 1 < groups() ? header_.group_samples : samples_ - g * header_.group_samples;
  // `first` comes from the file: the message does no arithmetic on it.
  if (n != expected_n || first != g * header_.group_samples)
    throw DataError(fmt::format("{}: holds {} samples from sample {}, expected {} from sample {}", group_name(g), n,
                                first, expected_n, g * header_.group_samples));
}

void BinaryFile::check_group(int64_t g, std::vector<char>& scratch) const {
  const int64_t begin = static_cast<int64_t>(group_offsets_[static_cast<std::size_t>(g)]);
  const int64_t bytes = group_bytes(g);  // at least a group header and a CRC: the trailer check ensures it
  char head[kGroupHeaderBytes];
  std::string error = pread_range(begin, head, sizeof(head));
  if (!error.empty()) throw IoError(error);
  check_group_head(g, head, bytes);
  uint32_t computed = crc32c(head, sizeof(head));
  const int64_t body_end = begin + bytes - 4;
  scratch.resize(static_cast<std::size_t>(std::min<int64_t>(static_cast<int64_t>(kMinPieceBytes), bytes)));
  for (int64_t at = begin + kGroupHeaderBytes; at < body_end;) {
    const auto size = static_cast<std::size_t>(std::min<int64_t>(body_end - at, static_cast<int64_t>(scratch.size())));
    error = pread_range(at, scratch.data(), size);
    if (!error.empty()) throw IoError(error);
    computed = crc32c(scratch.data(), size, computed);
    at += static_cast<int64_t>(size);
  }
  char seal[4];
  error = pread_range(body_end, seal, sizeof(seal));
  if (!error.empty()) throw IoError(error);
  check_group_seal(g, head, get<uint32_t>(seal), computed);
}

void BinaryFile::read_group(int64_t g, RowGroup& out, int threads) {
  HETREC_CHECK(g >= 0 && g < groups(), "row group index out of range");
  threads = std::max(threads, 1);
  const auto begin = static_cast<int64_t>(group_offsets_[static_cast<std::size_t>(g)]);
  const int64_t bytes = group_bytes(g);
  buffer_.resize(static_cast<std::size_t>(bytes));
  read_at_parallel(begin, buffer_.data(), buffer_.size(), threads);
  const char* p = buffer_.data();

  check_group_head(g, p, bytes);
  const int64_t n = get<uint32_t>(p + 4);
  const auto first = static_cast<int64_t>(get<uint64_t>(p + 8));
  const auto payload = static_cast<int64_t>(get<uint64_t>(p + 16));
  check_group_seal(g, p, get<uint32_t>(p + bytes - 4),
                   crc32c_parallel(p, static_cast<std::size_t>(bytes - 4), threads));

  const char* cursor = p + kGroupHeaderBytes;
  const char* const payload_end = cursor + payload;
  auto take = [&](int64_t size, const char* what) {
    if (size < 0 || size > payload_end - cursor)
      throw DataError(fmt::format("{}: {} run past the end of the group (corrupt file)", group_name(g), what));
    const char* at = cursor;
    cursor += size;
    return at;
  };
  const auto sn = static_cast<std::size_t>(n);
  const int nd = header_.num_dense;
  out.index = g;
  out.first_sample = first;
  out.size = n;
  out.labels.resize(sn);
  const char* labels = take(padded_to_4(n), "labels");
  for (std::size_t i = 0; i < sn; ++i) {
    const auto y = static_cast<unsigned char>(labels[i]);
    if (y > 1)
      throw DataError(fmt::format("{}, sample {}: label {}: expected 0 or 1", group_name(g), first + static_cast<int64_t>(i), y));
    out.labels[i] = static_cast<float>(y);
  }
  out.dense.resize(sn * static_cast<std::size_t>(nd));
  for (int j = 0; j < nd; ++j) {
    const char* column = take(n * 4, "dense columns");
    for (std::size_t i = 0; i < sn; ++i) {
      const float x = get<float>(column + 4 * i);
      if (!std::isfinite(x))
        throw DataError(fmt::format("{}, sample {}: dense feature {} is {}: expected a finite value", group_name(g),
                                    first + static_cast<int64_t>(i), j, x));
      out.dense[i * static_cast<std::size_t>(nd) + static_cast<std::size_t>(j)] = x;
    }
  }
  const auto tables = static_cast<std::size_t>(header_.num_tables());
  out.lengths.resize(tables);
  out.bag_begin.resize(tables);
  out.ids.resize(tables);

  // Pass 1, in table order: where each table's lengths and ids lie (their sizes follow
  // from the lengths). The first structural error stops it; the tables located before it
  // are still checked below, so the error reported is the first in file order, as a
  // sequential read would report it.
  struct Section {
    const char* lengths = nullptr;
    const char* ids = nullptr;
    int64_t count = 0;
  };
  std::vector<Section> sections;
  sections.reserve(tables);
  std::string structural_error;
  try {
    for (std::size_t t = 0; t < tables; ++t) {
      Section sec;
      sec.lengths = take(n * 4, "bag lengths");
      for (std::size_t i = 0; i < sn; ++i) {
        const uint32_t length = get<uint32_t>(sec.lengths + 4 * i);
        if (length > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
          throw DataError(fmt::format("{}, sample {}, table {}: bag length {} (corrupt file)", group_name(g),
                                      first + static_cast<int64_t>(i), t, length));
        sec.count += length;
      }
      if (sec.count > (payload_end - cursor) / 4)
        throw DataError(fmt::format("{}, table {}: bag lengths add up to {} ids, more than the group holds (corrupt file)",
                                    group_name(g), t, sec.count));
      sec.ids = take(sec.count * 4, "ids");
      sections.push_back(sec);
    }
  } catch (const DataError& e) {
    structural_error = e.what();
  }

  // Pass 2 in parallel: each table's prefix offsets, then its ids copied and range
  // checked in ranges of at most kChunkElements (one table may hold half of the ids).
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::size_t t = 0; t < sections.size(); ++t) {
    auto& bag_begin = out.bag_begin[t];
    auto& out_lengths = out.lengths[t];
    bag_begin.resize(sn + 1);
    out_lengths.resize(sn);
    bag_begin[0] = 0;
    for (std::size_t i = 0; i < sn; ++i) {
      const auto length = static_cast<int32_t>(get<uint32_t>(sections[t].lengths + 4 * i));
      out_lengths[i] = length;
      bag_begin[i + 1] = bag_begin[i] + length;
    }
    out.ids[t].resize(static_cast<std::size_t>(sections[t].count));
  }
  std::vector<int64_t> counts(sections.size());
  for (std::size_t t = 0; t < sections.size(); ++t) counts[t] = sections[t].count;
  const std::vector<ChunkRange> ranges = chunk_ranges(counts);
  std::vector<int64_t> first_bad(ranges.size(), -1);  // per range: the first id out of range
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::size_t r = 0; r < ranges.size(); ++r) {
    const ChunkRange& c = ranges[r];
    int32_t* ids = out.ids[c.array].data();
    std::memcpy(ids + c.begin, sections[c.array].ids + 4 * c.begin, static_cast<std::size_t>(c.end - c.begin) * 4);
    const auto rows = static_cast<uint64_t>(header_.rows[c.array]);
    for (int64_t k = c.begin; k < c.end; ++k)
      if (static_cast<uint32_t>(ids[k]) >= rows) {
        first_bad[r] = k;
        break;
      }
  }
  // The first bad id in file order: ranges are in table order, then id order.
  std::vector<std::string> id_errors;
  for (std::size_t r = 0; r < ranges.size() && id_errors.empty(); ++r) {
    if (first_bad[r] < 0) continue;
    const std::size_t t = ranges[r].array;
    const auto& bag_begin = out.bag_begin[t];
    const auto i = static_cast<int64_t>(std::upper_bound(bag_begin.begin(), bag_begin.end(), first_bad[r]) - bag_begin.begin()) - 1;
    id_errors.push_back(fmt::format("{}, sample {}, table {}: id {} outside [0, {})", group_name(g), first + i, t,
                                    static_cast<uint32_t>(out.ids[t][static_cast<std::size_t>(first_bad[r])]),
                                    header_.rows[t]));
  }
  for (const std::string& e : id_errors)
    if (!e.empty()) throw DataError(e);
  if (!structural_error.empty()) throw DataError(structural_error);
  if (cursor != payload_end)
    throw DataError(fmt::format("{}: {} bytes left over after the last table (corrupt file)", group_name(g),
                                payload_end - cursor));
}

}  // namespace hetrec::data::data
