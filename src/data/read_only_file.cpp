#include "data/read_only_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace hetrec::inline data {

ReadOnlyFile::ReadOnlyFile(std::string path, const std::string& what) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    throw IoError(path_ + ": cannot open for reading" + (what.empty() ? "" : " (" + what + ")") + ": " +
                  std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw IoError(path_ + ": " + (S_ISREG(st.st_mode) ? std::string("cannot stat: ") + std::strerror(err)
                                                      : std::string("not a regular file")) +
                  (what.empty() ? "" : " (" + what + ")"));
  }
  size_ = static_cast<int64_t>(st.st_size);
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

ReadOnlyFile::ReadOnlyFile(ReadOnlyFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

ReadOnlyFile& ReadOnlyFile::operator=(ReadOnlyFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

void ReadOnlyFile::read_at(int64_t offset, void* data, std::size_t size) const {
  auto* out = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd_, out + done, size - done, static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError(fmt::format("{}: read of {} bytes at offset {} failed: {}", path_, size, offset,
                                std::strerror(errno)));
    }
    if (n == 0)
      throw DataError(fmt::format("{}: ends at byte {}, a read needed bytes up to {} (the file was truncated while "
                                  "open)",
                                  path_, offset + static_cast<int64_t>(done), offset + static_cast<int64_t>(size)));
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace hetrec::data::data
