#pragma once
// Files written through a temporary beside their destination: the temporary is created
// exclusively (O_CREAT | O_EXCL | O_NOFOLLOW), so a file or a symbolic link planted at its
// name can never redirect the write, and it replaces the destination only by rename(2)
// once complete, so a reader sees the old file or the new one, never a torn one.
//
// Temporary names are "<destination>.tmp-<pid>" (the pid lets a later process tell a
// temporary of a live writer from one left by a crash: `temporary_owner_alive`).
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace hetrec {

// The temporary name a process `pid` writes `destination` through.
std::string temporary_name(const std::string& destination, pid_t pid);

// When `name` is a temporary name ("<anything>.tmp-<digits>"), the pid in it; else -1.
pid_t temporary_owner(const std::string& name);

// True when the process that owns the temporary `name` still exists (or the name holds
// no pid: then it is not ours to judge, and treated as alive).
bool temporary_owner_alive(const std::string& name);

// A temporary file open for writing. The destructor removes the temporary unless
// `commit` has renamed it into place.
class ExclusiveFile {
 public:
  // Creates `temporary_name(destination, getpid())` exclusively with `mode`. Throws
  // IoError naming the file when it exists already (a planted file or link, or another
  // writer), or cannot be created.
  explicit ExclusiveFile(std::string destination, mode_t mode = 0644);
  ~ExclusiveFile();
  ExclusiveFile(const ExclusiveFile&) = delete;
  ExclusiveFile& operator=(const ExclusiveFile&) = delete;

  int fd() const { return fd_; }
  const std::string& temporary() const { return temporary_; }
  const std::string& destination() const { return destination_; }

  // Writes all of `size` bytes; throws IoError naming the temporary and the OS error.
  void write(const void* data, std::size_t size);
  // fsync, close, rename over the destination, fsync of its directory. Throws IoError
  // (the temporary is then removed and the destination untouched).
  void commit();

 private:
  std::string destination_, temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes `text` to `path` through an ExclusiveFile (the whole-file form of the above).
void write_file_atomically(const std::string& path, const std::string& text, mode_t mode = 0644);

// Opens `path` for appending (created with `mode` when missing) without following a
// symbolic link at its name: a link planted there is refused, not written through.
// Returns the descriptor (O_CLOEXEC); throws IoError naming `what` and the path.
int open_for_appending(const std::string& path, const std::string& what, mode_t mode = 0644);

// fsync of a directory, so a rename inside it survives a power cut (best effort: a
// directory that cannot be opened is skipped, the rename itself is already atomic).
void fsync_directory(const std::string& dir);

}  // namespace hetrec
