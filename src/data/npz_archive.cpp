#include "data/npz_archive.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace hetrec::inline data {
namespace {

// Record signatures and fixed sizes (PKWARE APPNOTE.TXT 4.3).
constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr int64_t kLocalHeaderBytes = 30;
constexpr int64_t kCentralHeaderBytes = 46;
constexpr int64_t kEndBytes = 22;
constexpr int64_t kZip64EndBytes = 56;
constexpr int64_t kZip64LocatorBytes = 20;
constexpr int64_t kMaxCommentBytes = 65535;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kZip64Marker32 = 0xffffffffu;
constexpr uint16_t kZip64Marker16 = 0xffffu;
constexpr uint16_t kEncryptedFlag = 0x0001;  // general purpose bit 0
// The central directory of an archive of hetrec inputs holds a few dozen entries of
// about 100 bytes; a larger one than this is taken as corrupt rather than read.
constexpr int64_t kMaxCentralDirectoryBytes = int64_t{64} << 20;

uint64_t le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

class Reader {
 public:
  Reader(const unsigned char* data, std::size_t size) : data_(data), size_(size) {}
  bool has(std::size_t offset, std::size_t bytes) const { return offset <= size_ && bytes <= size_ - offset; }
  uint64_t at(std::size_t offset, int bytes) const { return le(data_ + offset, bytes); }

 private:
  const unsigned char* data_;
  std::size_t size_;
};

}  // namespace

NpzArchive::NpzArchive(std::string path, const std::string& what) : file_(std::move(path), what) {
  const std::string& name = file_.path();
  auto fail = [&](const std::string& why) -> void {
    throw DataError(fmt::format("{}: not a readable .npz (ZIP) archive: {}", name, why));
  };
  const int64_t size = file_.size();
  if (size < kEndBytes) fail(fmt::format("{} bytes, shorter than the 22-byte end record", size));

  // The end-of-central-directory record: the last 22 bytes, unless a comment follows it.
  const int64_t tail_bytes = std::min<int64_t>(size, kEndBytes + kMaxCommentBytes);
  std::vector<unsigned char> tail(static_cast<std::size_t>(tail_bytes));
  file_.read_at(size - tail_bytes, tail.data(), tail.size());
  int64_t end_pos = -1;
  for (int64_t p = tail_bytes - kEndBytes; p >= 0; --p) {
    const unsigned char* r = tail.data() + p;
    if (le(r, 4) == kEndSig && p + kEndBytes + static_cast<int64_t>(le(r + 20, 2)) <= tail_bytes) {
      end_pos = p;
      break;
    }
  }
  if (end_pos < 0) fail("no end-of-central-directory record (a truncated or foreign file)");
  const unsigned char* end = tail.data() + end_pos;
  const int64_t end_offset = size - tail_bytes + end_pos;
  if (le(end + 4, 2) != 0 || le(end + 6, 2) != 0) fail("a multi-disk archive");
  uint64_t entries = le(end + 10, 2);
  uint64_t cd_bytes = le(end + 12, 4);
  uint64_t cd_offset = le(end + 16, 4);
  int64_t cd_limit = end_offset;  // the directory ends before the end record(s)

  // ZIP64: a locator just before the end record points at the ZIP64 end record.
  if (end_offset >= kZip64LocatorBytes) {
    unsigned char loc[kZip64LocatorBytes];
    file_.read_at(end_offset - kZip64LocatorBytes, loc, sizeof loc);
    if (le(loc, 4) == kZip64LocatorSig) {
      const uint64_t z_offset = le(loc + 8, 8);
      if (z_offset > static_cast<uint64_t>(end_offset - kZip64LocatorBytes - kZip64EndBytes))
        fail(fmt::format("the ZIP64 end record offset {} lies outside the file", z_offset));
      unsigned char z[kZip64EndBytes];
      file_.read_at(static_cast<int64_t>(z_offset), z, sizeof z);
      if (le(z, 4) != kZip64EndSig) fail(fmt::format("no ZIP64 end record at offset {}", z_offset));
      if (le(z + 16, 4) != 0 || le(z + 20, 4) != 0) fail("a multi-disk archive");
      entries = le(z + 32, 8);
      cd_bytes = le(z + 40, 8);
      cd_offset = le(z + 48, 8);
      cd_limit = static_cast<int64_t>(z_offset);
    }
  }
  if (cd_offset > static_cast<uint64_t>(cd_limit) || cd_bytes > static_cast<uint64_t>(cd_limit) - cd_offset)
    fail(fmt::format("the central directory ({} bytes at offset {}) lies outside the file", cd_bytes, cd_offset));
  if (static_cast<int64_t>(cd_bytes) > kMaxCentralDirectoryBytes)
    fail(fmt::format("a central directory of {} bytes (expected at most {})", cd_bytes, kMaxCentralDirectoryBytes));
  if (entries > cd_bytes / kCentralHeaderBytes)
    fail(fmt::format("{} entries cannot fit a central directory of {} bytes", entries, cd_bytes));

  std::vector<unsigned char> cd(static_cast<std::size_t>(cd_bytes));
  file_.read_at(static_cast<int64_t>(cd_offset), cd.data(), cd.size());
  const Reader r(cd.data(), cd.size());
  std::set<std::string> names;
  std::size_t pos = 0;
  for (uint64_t e = 0; e < entries; ++e) {
    if (!r.has(pos, kCentralHeaderBytes) || r.at(pos, 4) != kCentralHeaderSig)
      fail(fmt::format("central directory entry {} is truncated or has a wrong signature", e));
    NpzMember m;
    const auto flags = static_cast<uint16_t>(r.at(pos + 8, 2));
    m.method = static_cast<uint16_t>(r.at(pos + 10, 2));
    m.crc32 = static_cast<uint32_t>(r.at(pos + 16, 4));
    uint64_t csize = r.at(pos + 20, 4), usize = r.at(pos + 24, 4);
    const std::size_t name_len = r.at(pos + 28, 2), extra_len = r.at(pos + 30, 2), comment_len = r.at(pos + 32, 2);
    const uint64_t disk = r.at(pos + 34, 2);
    uint64_t local = r.at(pos + 42, 4);
    const std::size_t var = pos + kCentralHeaderBytes;
    if (!r.has(var, name_len + extra_len + comment_len))
      fail(fmt::format("central directory entry {} runs past the directory", e));
    m.name.assign(reinterpret_cast<const char*>(cd.data() + var), name_len);
    // ZIP64 extended information: the 64-bit values of the fields marked 0xffffffff, in order.
    bool need64 = usize == kZip64Marker32 || csize == kZip64Marker32 || local == kZip64Marker32;
    for (std::size_t x = var + name_len; need64 && x + 4 <= var + name_len + extra_len;) {
      const uint64_t id = r.at(x, 2), len = r.at(x + 2, 2);
      if (x + 4 + len > var + name_len + extra_len) fail(fmt::format("member '{}': malformed extra field", m.name));
      if (id == kZip64ExtraId) {
        std::size_t f = x + 4;
        auto take = [&](uint64_t& field) {
          if (field != kZip64Marker32) return;
          if (f + 8 > x + 4 + len) fail(fmt::format("member '{}': ZIP64 extra field too short", m.name));
          field = r.at(f, 8);
          f += 8;
        };
        take(usize);
        take(csize);
        take(local);
        need64 = false;
      }
      x += 4 + len;
    }
    if (need64) fail(fmt::format("member '{}': 32-bit size markers without a ZIP64 extra field", m.name));
    if (disk != 0 && disk != kZip64Marker16) fail("a multi-disk archive");
    if (flags & kEncryptedFlag) fail(fmt::format("member '{}' is encrypted", m.name));
    if (m.method != kZipStored && m.method != kZipDeflated)
      fail(fmt::format("member '{}' uses compression method {}: expected 0 (stored) or 8 (deflate)", m.name,
                       m.method));
    if (m.method == kZipStored && csize != usize)
      fail(fmt::format("stored member '{}' has {} compressed and {} uncompressed bytes", m.name, csize, usize));
    if (!names.insert(m.name).second) fail(fmt::format("two members named '{}'", m.name));
    if (usize > static_cast<uint64_t>(INT64_MAX) || csize > static_cast<uint64_t>(cd_offset))
      fail(fmt::format("member '{}': {} compressed bytes cannot fit before the directory", m.name, csize));
    m.compressed_bytes = static_cast<int64_t>(csize);
    m.bytes = static_cast<int64_t>(usize);

    // The local header: its own name and extra field decide where the data starts.
    if (local > cd_offset || cd_offset - local < static_cast<uint64_t>(kLocalHeaderBytes))
      fail(fmt::format("member '{}': local header offset {} lies outside the data area", m.name, local));
    unsigned char lh[kLocalHeaderBytes];
    file_.read_at(static_cast<int64_t>(local), lh, sizeof lh);
    if (le(lh, 4) != kLocalHeaderSig) fail(fmt::format("member '{}': no local header at offset {}", m.name, local));
    if (le(lh + 8, 2) != m.method)
      fail(fmt::format("member '{}': the local header's compression method differs from the directory's", m.name));
    const uint64_t lname = le(lh + 26, 2), lextra = le(lh + 28, 2);
    const uint64_t data = local + kLocalHeaderBytes + lname + lextra;
    if (data > cd_offset || csize > cd_offset - data)
      fail(fmt::format("member '{}': its {} bytes at offset {} run past the data area", m.name, csize, data));
    std::string lname_text(lname, '\0');
    file_.read_at(static_cast<int64_t>(local + kLocalHeaderBytes), lname_text.data(), lname_text.size());
    if (lname_text != m.name)
      fail(fmt::format("member '{}': the local header names it '{}'", m.name, lname_text));
    m.data_offset = static_cast<int64_t>(data);
    members_.push_back(std::move(m));
    pos = var + name_len + extra_len + comment_len;
  }
}

const NpzMember* NpzArchive::find(const std::string& name) const {
  for (const NpzMember& m : members_)
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace hetrec::data::data
