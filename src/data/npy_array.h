#pragma once
// Reads rows of one .npy array without loading it: a .npy file, or a member of an .npz
// archive. A file and a stored member are read in place with positioned reads (any
// order, any thread); a deflated member is inflated as a stream (zlib), so reading is
// sequential: rows ahead are reached by inflating and discarding the bytes between, a
// row behind the stream restarts it from the member's first byte. Its CRC-32 is checked
// when the stream reaches the member's end.
//
// "Row" means one index of the first dimension (the sample): row_bytes() is the item
// size times the product of the other dimensions.
#include <cstdint>
#include <memory>
#include <string>

#include "data/npy_format.h"
#include "data/npz_archive.h"
#include "data/read_only_file.h"

namespace hetrec::inline data {

class NpyArray {
 public:
  // The .npy file `path`; `what` names its origin in open errors. DataError naming the
  // file for a malformed header or a size other than header + data.
  static NpyArray open_file(const std::string& path, const std::string& what = "");
  // A member of `archive` (which must outlive the array); the same checks against the
  // member's uncompressed size.
  static NpyArray open_member(const NpzArchive& archive, const NpzMember& member);

  NpyArray(NpyArray&&) noexcept;
  NpyArray& operator=(NpyArray&&) noexcept;
  ~NpyArray();

  // "<file>" or "<archive>, member '<name>'", as errors name it.
  const std::string& name() const;
  const NpyHeader& header() const;
  bool deflated() const;
  int64_t rows() const;       // shape[0] (1 for a scalar)
  int64_t row_bytes() const;  // bytes of one row

  // Copies rows [first, first + count) into `out` (count * row_bytes() bytes), as stored
  // (little-endian). DataError when the range is outside the array or a deflated member
  // is corrupt (a bad stream, a wrong CRC-32, fewer bytes than its header promises).
  // Not thread-safe for a deflated member; concurrent reads of other arrays are.
  void read_rows(int64_t first, int64_t count, void* out);

  class Impl;

 private:
  explicit NpyArray(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hetrec::data::data
