#include "core/exclusive_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace hetrec {
namespace {

constexpr const char* kTemporaryMark = ".tmp-";

std::string os_error() { return std::strerror(errno); }

std::string parent_of(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

}  // namespace

std::string temporary_name(const std::string& destination, pid_t pid) {
  return destination + kTemporaryMark + std::to_string(pid);
}

pid_t temporary_owner(const std::string& name) {
  const std::size_t at = name.rfind(kTemporaryMark);
  if (at == std::string::npos) return -1;
  const std::string digits = name.substr(at + std::strlen(kTemporaryMark));
  if (digits.empty() || digits.size() > 9) return -1;  // pids fit in 9 digits (pid_max <= 2^22)
  for (char c : digits)
    if (c < '0' || c > '9') return -1;
  const long pid = std::stol(digits);
  return pid > 0 ? static_cast<pid_t>(pid) : -1;
}

bool temporary_owner_alive(const std::string& name) {
  const pid_t pid = temporary_owner(name);
  if (pid <= 0) return true;
  if (pid == ::getpid()) return true;
  // kill(pid, 0): 0 or EPERM when the process exists (EPERM: another user's), ESRCH when not.
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

ExclusiveFile::ExclusiveFile(std::string destination, mode_t mode)
    : destination_(std::move(destination)), temporary_(temporary_name(destination_, ::getpid())) {
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd_ < 0) {
    const int err = errno;
    if (err == EEXIST)
      throw IoError("'" + temporary_ + "': cannot create the temporary file for '" + destination_ +
                    "': a file or link of that name exists already (another writer, or one planted there); "
                    "nothing was written");
    throw IoError("'" + temporary_ + "': cannot create: " + std::strerror(err));
  }
}

ExclusiveFile::~ExclusiveFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temporary_.c_str());
}

void ExclusiveFile::write(const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError("'" + temporary_ + "': write failed: " + os_error());
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void ExclusiveFile::commit() {
  if (::fsync(fd_) != 0) throw IoError("'" + temporary_ + "': fsync failed: " + os_error());
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw IoError("'" + temporary_ + "': close failed: " + os_error());
  if (std::rename(temporary_.c_str(), destination_.c_str()) != 0)
    throw IoError("'" + destination_ + "': rename from the temporary file failed: " + os_error());
  committed_ = true;
  fsync_directory(parent_of(destination_));
}

void write_file_atomically(const std::string& path, const std::string& text, mode_t mode) {
  ExclusiveFile file(path, mode);
  file.write(text.data(), text.size());
  file.commit();
}

int open_for_appending(const std::string& path, const std::string& what, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0) return fd;
  const int err = errno;
  if (err == ELOOP)
    throw IoError(what + " '" + path + "': is a symbolic link; refusing to write through it (name a regular file)");
  throw IoError(what + " '" + path + "': cannot open for appending: " + std::strerror(err));
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace hetrec
