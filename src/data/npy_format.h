#pragma once
// The NumPy .npy array format (numpy.lib.format, versions 1.0, 2.0 and 3.0):
//
//   "\x93NUMPY" major minor  header_len (uint16 LE for 1.0, uint32 LE for 2.0/3.0)
//   header: a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (n, k), }
//           padded with spaces and ended by '\n'
//   data:   the elements, C order, in the byte order 'descr' names
//
// The parser is strict and bounded: every length is checked against the bytes given, the
// dict must hold exactly those three keys, 'descr' must be a simple little-endian (or
// one-byte) scalar type, and Fortran order is refused. Errors are DataError naming the
// array (`name`: a file, or an archive and its member) and what was expected.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hetrec::inline data {

// The bytes before the dict: magic (6), version (2), length (2 for 1.0, 4 for 2.0/3.0).
inline constexpr std::size_t kNpyMagicBytes = 6;
inline constexpr std::size_t kNpyPreambleBytesV1 = 10;
inline constexpr std::size_t kNpyPreambleBytesV2 = 12;
// Upper bound on the dict's length: the 16-bit length field of version 1.0. Every file
// numpy writes for a plain array is far below it (numpy itself refuses dicts longer
// than 10000 bytes unless told otherwise); a longer one is taken as a corrupt header.
inline constexpr std::size_t kMaxNpyDictBytes = 65535;

enum class NpyType { b1, i1, u1, i2, u2, i4, u4, i8, u8, f4, f8 };

struct NpyHeader {
  int major = 1, minor = 0;
  std::string descr;           // as written, e.g. "<f4"
  NpyType type = NpyType::f4;
  int item_bytes = 4;
  std::vector<int64_t> shape;  // C order; empty for a scalar
  int64_t header_bytes = 0;    // preamble + dict: where the data starts

  int64_t elements() const;    // product of shape (1 for a scalar)
  int64_t data_bytes() const;  // elements() * item_bytes (checked against overflow when parsed)
};

// The name numpy gives a type in its 'descr' field, e.g. "<i4", "|u1".
const char* npy_type_descr(NpyType type);

// How many bytes of the stream the header occupies, from its first bytes: `size` must be
// at least kNpyPreambleBytesV2 or the whole stream when it is shorter. DataError for a
// stream that is not .npy (bad magic), an unknown version, a dict longer than
// kMaxNpyDictBytes, or a stream too short for its own preamble.
int64_t npy_header_bytes(const char* data, std::size_t size, std::string_view name);

// Parses the header from the first `size` bytes of the stream (at least
// npy_header_bytes of them). DataError for anything malformed: a truncated header, a
// dict that is not exactly {'descr', 'fortran_order', 'shape'}, a structured, big-endian
// or unsupported type, fortran_order True, negative or overflowing dimensions.
NpyHeader parse_npy_header(const char* data, std::size_t size, std::string_view name);

// The header numpy.save writes for a C-order array (version 1.0, dict padded so that the
// data starts at a multiple of 64 bytes). Used by writers and tests.
std::string make_npy_header(NpyType type, const std::vector<int64_t>& shape);

}  // namespace hetrec::data::data
