#pragma once
// Reads a text file line by line through a fixed buffer (constant memory whatever the
// file size; a line longer than the buffer grows the output string only).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace hetrec::inline data {

class LineReader {
 public:
  // Opens `path`; throws IoError naming it (and `what`, e.g. the config key) on failure.
  explicit LineReader(std::string path, const std::string& what = "");
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its '\n' (and without a '\r' before it). False at end of file.
  bool next(std::string& line);
  // Back to the first line.
  void rewind();
  // Lines returned so far (the 1-based number of the last one).
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }

 private:
  bool refill();

  // 1 MiB: large enough that a read system call moves thousands of Criteo lines.
  static constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
};

}  // namespace hetrec::data::data
