#pragma once
// The table of contents of a NumPy .npz archive: a ZIP file (PKWARE APPNOTE.TXT) whose
// members are .npy arrays, as numpy.savez (stored) and numpy.savez_compressed (deflated)
// write them, ZIP64 included (members over 4 GiB). Only the central directory and the
// local headers are read here; NpyArray reads a member's data.
//
// Refused with a DataError naming the archive: a file without an end-of-central-
// directory record, a multi-disk archive, a directory or local header outside the file
// or with a wrong signature, encrypted members, compression other than stored (0) or
// deflate (8), a stored member whose sizes differ, two members of the same name.
#include <cstdint>
#include <string>
#include <vector>

#include "data/read_only_file.h"

namespace hetrec::inline data {

// ZIP compression methods (APPNOTE 4.4.5).
inline constexpr uint16_t kZipStored = 0;
inline constexpr uint16_t kZipDeflated = 8;

struct NpzMember {
  std::string name;              // e.g. "7.npy"
  uint16_t method = kZipStored;
  uint32_t crc32 = 0;            // of the uncompressed bytes
  int64_t compressed_bytes = 0;
  int64_t bytes = 0;             // uncompressed
  int64_t data_offset = 0;       // of the (compressed) data in the archive
};

class NpzArchive {
 public:
  // Opens and indexes `path`; `what` names its origin in open errors (a config key).
  explicit NpzArchive(std::string path, const std::string& what = "");

  const std::string& path() const { return file_.path(); }
  const ReadOnlyFile& file() const { return file_; }
  const std::vector<NpzMember>& members() const { return members_; }
  // The member called `name`, or nullptr.
  const NpzMember* find(const std::string& name) const;

 private:
  ReadOnlyFile file_;
  std::vector<NpzMember> members_;
};

}  // namespace hetrec::data::data
