#include "harness/fuzz_support.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace hetrec::fuzz {

std::string_view FuzzInput::until(char separator) {
  const std::size_t begin = pos_;
  while (pos_ < data_.size() && data_[pos_] != static_cast<uint8_t>(separator)) ++pos_;
  const std::string_view out(reinterpret_cast<const char*>(data_.data()) + begin, pos_ - begin);
  if (pos_ < data_.size()) ++pos_;  // the separator itself
  return out;
}

std::string_view FuzzInput::rest() {
  const std::size_t begin = std::min(pos_, data_.size());
  pos_ = data_.size();
  return {reinterpret_cast<const char*>(data_.data()) + begin, data_.size() - begin};
}

MemoryFile::MemoryFile(std::string_view contents) {
  fd_ = ::memfd_create("hetrec-fuzz-input", MFD_CLOEXEC);
  if (fd_ < 0) throw FindingError{std::string("memfd_create failed: ") + std::strerror(errno)};
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t w = ::write(fd_, contents.data() + done, contents.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw FindingError{std::string("writing the memory file failed: ") + std::strerror(errno)};
    done += static_cast<std::size_t>(w);
  }
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemoryFile::~MemoryFile() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Memory-backed when the system has it: the targets write a file on every input.
std::filesystem::path scratch_parent() {
  std::error_code ec;
  if (std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return std::filesystem::temp_directory_path();
}

}  // namespace

ScratchDirectory::ScratchDirectory()
    : path_((scratch_parent() / ("hetrec_fuzz_" + std::to_string(::getpid()))).string()) {
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;  // a destructor must not throw
  std::filesystem::remove_all(path_, ignored);
}

void finding(const std::string& what) { throw FindingError{what}; }

int open_file_descriptors() {
  int count = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++count;
  return count;
}

void run_target(void (*target)(std::span<const uint8_t>), std::span<const uint8_t> data) {
  const int before = open_file_descriptors();
  target(data);
  const int after = open_file_descriptors();
  if (after != before)
    finding(std::to_string(after - before) + " file descriptor(s) left open (" + std::to_string(before) + " before, " +
            std::to_string(after) + " after)");
}

}  // namespace hetrec::fuzz
