#include "train/checkpoint_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "core/error.h"

namespace hetrec::inline train {
namespace {

constexpr const char* kLockName = ".lock";
// The holder writes its pid right after taking the lock; a run that finds the lock taken
// but the file still empty waits this long for the pid before it reports it as unknown.
constexpr int kPidReadAttempts = 50;
constexpr auto kPidReadInterval = std::chrono::milliseconds(10);
constexpr std::size_t kPidTextMax = 32;

std::string read_holder_pid(int fd) {
  for (int attempt = 0; attempt < kPidReadAttempts; ++attempt) {
    char text[kPidTextMax] = {};
    const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
    std::string pid;
    for (ssize_t i = 0; i < n && text[i] >= '0' && text[i] <= '9'; ++i) pid += text[i];
    if (!pid.empty() && n > 0 && text[pid.size()] == '\n') return pid;
    std::this_thread::sleep_for(kPidReadInterval);
  }
  return {};
}

}  // namespace

std::string CheckpointDirLock::lock_path(const std::string& dir) {
  return (std::filesystem::path(dir) / kLockName).string();
}

CheckpointDirLock::CheckpointDirLock(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError("train.checkpoint_dir '" + dir + "': cannot create the directory: " + ec.message());
  const std::string path = lock_path(dir);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError("checkpoint directory lock '" + path + "': cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw IoError("checkpoint directory lock '" + path + "': not a regular file");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    if (err == EWOULDBLOCK) holder = read_holder_pid(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK)
      throw IoError("checkpoint directory lock '" + path + "': cannot lock: " + std::strerror(err));
    throw IoError("train.checkpoint_dir '" + dir + "' is in use by another run (" +
                  (holder.empty() ? std::string("pid unknown") : "pid " + holder) + " holds " + path +
                  "); one run per checkpoint directory: wait for it to end or choose another train.checkpoint_dir");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  // Best effort: the pid only serves the message of a run that finds the lock taken.
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t written = ::pwrite(fd_, pid.data(), pid.size(), 0);
    (void)written;
  }
}

CheckpointDirLock::~CheckpointDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace hetrec::train::train
