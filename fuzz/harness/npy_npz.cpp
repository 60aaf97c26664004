// Fuzz target: the NumPy readers of the MLPerf multi-hot days: the .npy header
// (data/npy_format.h), .npz archives (data/npz_archive.h: ZIP, ZIP64, stored and
// deflated members) and the row reader over both (data/npy_array.h).
#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "data/npy_array.h"
#include "data/npy_format.h"
#include "data/npz_archive.h"
#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"

namespace hetrec::fuzz {
namespace {

// Mode byte: bit 0 reads the rest as an .npz archive (else as one .npy file); bits 1-2
// pick how many rows each read takes; bit 3 reads the chunks last to first (a deflated
// member then restarts its stream).
constexpr int64_t kRowsPerRead[] = {1, 3, 64, 1 << 20};
// Reads stop after this many bytes of one array: a small input may claim a large one.
constexpr int64_t kMaxReadBytes = int64_t{1} << 20;

int item_bytes_of(NpyType type) {
  switch (type) {
    case NpyType::b1: case NpyType::i1: case NpyType::u1: return 1;
    case NpyType::i2: case NpyType::u2: return 2;
    case NpyType::i4: case NpyType::u4: case NpyType::f4: return 4;
    case NpyType::i8: case NpyType::u8: case NpyType::f8: return 8;
  }
  return 0;
}

// An accepted header keeps its promises, and the header numpy would write for the same
// array parses back to the same array.
void check_header(const std::string& bytes) {
  const NpyHeader h = parse_npy_header(bytes.data(), bytes.size(), "fuzz");
  if (h.header_bytes < static_cast<int64_t>(kNpyPreambleBytesV1) || h.header_bytes > static_cast<int64_t>(bytes.size()))
    finding("header of " + std::to_string(h.header_bytes) + " bytes in an input of " + std::to_string(bytes.size()));
  if (npy_header_bytes(bytes.data(), bytes.size(), "fuzz") != h.header_bytes)
    finding("npy_header_bytes disagrees with parse_npy_header");
  if (h.item_bytes != item_bytes_of(h.type)) finding("descr '" + h.descr + "' with item size " + std::to_string(h.item_bytes));
  for (int64_t d : h.shape)
    if (d < 0) finding("a negative dimension was accepted");
  if (h.data_bytes() < 0 || h.data_bytes() != h.elements() * h.item_bytes) finding("data_bytes() overflowed");
  const std::string again = make_npy_header(h.type, h.shape);
  const NpyHeader r = parse_npy_header(again.data(), again.size(), "fuzz (rewritten)");
  if (r.type != h.type || r.shape != h.shape || r.header_bytes != static_cast<int64_t>(again.size()))
    finding("the header written for descr '" + h.descr + "' does not parse back to the same array");
}

// Reads the array's rows (up to kMaxReadBytes) in chunks; `stored` points at the array's
// data as it lies in the input (nullptr for a deflated member), which every read must
// reproduce. A deflated member is read twice: the second pass must give the same bytes.
void read_rows(NpyArray& a, const char* stored, int64_t rows_per_read, bool backwards) {
  const NpyHeader& h = a.header();
  if (a.rows() < 0 || a.row_bytes() < 0) finding("negative rows or row size");
  if (!h.shape.empty() && a.rows() * a.row_bytes() != h.data_bytes())
    finding("rows x row bytes differs from the header's data size");
  if (a.row_bytes() == 0) return;
  const int64_t rows = std::min(a.rows(), std::max<int64_t>(1, kMaxReadBytes / a.row_bytes()));
  std::vector<int64_t> firsts;
  for (int64_t first = 0; first < rows; first += rows_per_read) firsts.push_back(first);
  if (backwards) std::reverse(firsts.begin(), firsts.end());
  std::vector<char> got, first_pass(static_cast<std::size_t>(rows * a.row_bytes()));
  for (int pass = 0; pass < (a.deflated() ? 2 : 1); ++pass)
    for (int64_t first : firsts) {
      const int64_t count = std::min(rows_per_read, rows - first);
      got.resize(static_cast<std::size_t>(count * a.row_bytes()));
      a.read_rows(first, count, got.data());
      const std::size_t at = static_cast<std::size_t>(first * a.row_bytes());
      const char* expected = stored ? stored + at : pass == 1 ? first_pass.data() + at : nullptr;
      if (expected && std::memcmp(got.data(), expected, got.size()) != 0)
        finding("rows " + std::to_string(first) + "+" + std::to_string(count) + " of " + a.name() +
                " read back other bytes than the input holds");
      if (!stored && pass == 0) std::memcpy(first_pass.data() + at, got.data(), got.size());
    }
  // A range outside the array is refused, never read.
  if (accepted([&] { a.read_rows(a.rows(), 1, got.data()); })) finding("a row past the end of " + a.name() + " was read");
}

void read_archive(const std::string& path, const std::string& bytes, int64_t rows_per_read, bool backwards) {
  const NpzArchive archive(path, "fuzz");
  std::set<std::string> names;
  for (const NpzMember& m : archive.members()) {
    if (!names.insert(m.name).second) finding("two members named '" + m.name + "' were accepted");
    if (m.data_offset < 0 || m.compressed_bytes < 0 || m.bytes < 0 ||
        m.data_offset + m.compressed_bytes > static_cast<int64_t>(bytes.size()))
      finding("member '" + m.name + "' lies outside the archive");
    if (m.method != kZipStored && m.method != kZipDeflated) finding("member '" + m.name + "' of an unknown method");
    if (m.method == kZipStored && m.bytes != m.compressed_bytes) finding("stored member '" + m.name + "' with two sizes");
    if (archive.find(m.name) != &m) finding("find('" + m.name + "') returns another member");
  }
  for (const NpzMember& m : archive.members())
    accepted([&] {
      NpyArray a = NpyArray::open_member(archive, m);
      const char* stored = m.method == kZipStored ? bytes.data() + m.data_offset + a.header().header_bytes : nullptr;
      read_rows(a, stored, rows_per_read, backwards);
    });
}

}  // namespace

void npy_npz(std::span<const uint8_t> data) {
  FuzzInput in(data);
  const uint8_t mode = in.byte();
  const std::string bytes(in.rest());
  const int64_t rows_per_read = kRowsPerRead[(mode >> 1) & 3];
  const bool backwards = (mode & 8) != 0;
  const MemoryFile file(bytes);
  if (mode & 1) {
    accepted([&] { read_archive(file.path(), bytes, rows_per_read, backwards); });
    return;
  }
  accepted([&] { check_header(bytes); });
  accepted([&] {
    NpyArray a = NpyArray::open_file(file.path(), "fuzz");
    read_rows(a, bytes.data() + a.header().header_bytes, rows_per_read, backwards);
  });
}

}  // namespace hetrec::fuzz
