#pragma once
// A file opened for positioned reads (pread), shareable by threads: the readers of .npy
// arrays and .npz archives read ranges of it in place, in any order.
#include <cstddef>
#include <cstdint>
#include <string>

namespace hetrec::inline data {

class ReadOnlyFile {
 public:
  // Opens `path`; IoError naming it (and `what`, the config key it came from, if any)
  // when it cannot be opened or is not a regular file.
  explicit ReadOnlyFile(std::string path, const std::string& what = "");
  ~ReadOnlyFile();
  ReadOnlyFile(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }  // at open
  // Reads exactly `size` bytes at `offset`: IoError on a read error, DataError naming
  // the file when it ends before offset + size (it shrank since it was opened).
  void read_at(int64_t offset, void* data, std::size_t size) const;

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

}  // namespace hetrec::data::data
