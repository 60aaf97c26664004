#pragma once
// One run per checkpoint directory: an exclusive flock(2) on "<dir>/.lock", held for the
// lifetime of the object. The kernel releases it when the process ends, however it ends
// (a crash or SIGKILL included), so a stale lock file never blocks the next run. The
// holder writes its pid into the file, so that a second run can name it.
#include <sys/types.h>

#include <string>

namespace hetrec::inline train {

class CheckpointDirLock {
 public:
  // The lock file of `dir`.
  static std::string lock_path(const std::string& dir);

  // Creates `dir` when missing, then takes the lock without waiting. Throws IoError naming
  // the directory and the pid of the run that holds the lock, or naming the lock file and
  // the OS error when it cannot be opened (a symbolic link planted at its name is refused).
  explicit CheckpointDirLock(const std::string& dir);
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace hetrec::train::train
