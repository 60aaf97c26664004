#pragma once
// What every fuzz target shares: the input as a byte cursor, an in-memory file that the
// parsers open by path, and the rule that separates a rejection from a finding.
//
// A parser may reject any input with a typed hetrec::Error (the user then reads a
// message naming the file, line or key). Everything else is a finding: a crash, a
// sanitizer report, an InternalError (a broken invariant), any other exception, or an
// accepted input that breaks the documented guarantees of the parser's output. Targets
// report the last kind through finding().
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/error.h"

namespace hetrec::fuzz {

// Reads an input front to back; past its end every read yields zeros / empty text.
class FuzzInput {
 public:
  explicit FuzzInput(std::span<const uint8_t> data) : data_(data) {}

  uint8_t byte() { return pos_ < data_.size() ? data_[pos_++] : 0; }
  // The bytes up to (not including) the next `separator`, or to the end.
  std::string_view until(char separator);
  // Everything not read yet.
  std::string_view rest();
  bool empty() const { return pos_ >= data_.size(); }

 private:
  std::span<const uint8_t> data_;
  std::size_t pos_ = 0;
};

// A file that exists only in memory (memfd), reachable through path() by any code that
// opens files by name. Removed when destroyed.
class MemoryFile {
 public:
  explicit MemoryFile(std::string_view contents);
  ~MemoryFile();
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A scratch directory on disk for targets that must write files (atomic renames need a
// real directory), named after the process; removed with everything in it when destroyed.
class ScratchDirectory {
 public:
  ScratchDirectory();
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Reports an accepted input whose result breaks a guarantee: throws FindingError, which
// is deliberately not a hetrec::Error so that callers never take it for a rejection.
[[noreturn]] void finding(const std::string& what);

struct FindingError {
  std::string what;
};

// Open file descriptors of this process.
int open_file_descriptors();

// Runs one input through `target` and checks that it gave back every file descriptor it
// opened (a parser that throws must still close its file); a leak is a finding.
void run_target(void (*target)(std::span<const uint8_t>), std::span<const uint8_t> data);

// Runs `parse`; a typed rejection (hetrec::Error other than InternalError) is an
// expected outcome and returns false. Anything else propagates. True when accepted.
template <class Parse>
bool accepted(Parse&& parse) {
  try {
    parse();
    return true;
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace hetrec::fuzz
