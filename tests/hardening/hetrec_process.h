#pragma once
// Runs the hetrec program as a child process that a test can kill at any moment, with
// its stdout and stderr captured in files.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" char** environ;

namespace hetrec::test {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Resource limits and environment of the child (0 / empty = inherited).
struct ProcessLimits {
  // Caps every file the program writes, as a full disk would; SIGXFSZ is then ignored so
  // that a write past it fails with EFBIG instead of killing the program.
  rlim_t file_size = 0;
  // Caps the address space, so that a large allocation fails as on a machine without
  // the memory.
  rlim_t address_space = 0;
  // "NAME=value" entries that replace or extend the inherited environment.
  std::vector<std::string> environment;
};

class HetrecProcess {
 public:
  // Starts `program args...` with stdout and stderr written to `out` and `err`.
  HetrecProcess(const std::string& program, const std::vector<std::string>& args, const std::filesystem::path& out,
                const std::filesystem::path& err, const ProcessLimits& limits = {}) {
    std::vector<std::string> argv_text{program};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text = limits.environment;
    for (char** e = environ; *e != nullptr; ++e) {  // inherited, unless given above
      const std::string entry(*e);
      const std::string name = entry.substr(0, entry.find('=') + 1);
      bool replaced = false;
      for (const std::string& given : limits.environment) replaced = replaced || given.rfind(name, 0) == 0;
      if (!replaced) env_text.push_back(entry);
    }
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string out_path = out.string(), err_path = err.string();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) {  // the child: only async-signal-safe calls until exec
      const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out_fd < 0 || err_fd < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 || ::dup2(err_fd, STDERR_FILENO) < 0) ::_exit(126);
      if (limits.file_size > 0) {
        const rlimit limit{limits.file_size, limits.file_size};
        struct sigaction ignore {};
        ignore.sa_handler = SIG_IGN;
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0 || ::sigaction(SIGXFSZ, &ignore, nullptr) != 0) ::_exit(126);
      }
      if (limits.address_space > 0) {
        const rlimit limit{limits.address_space, limits.address_space};
        if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(126);
      }
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
  }
  ~HetrecProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  HetrecProcess(const HetrecProcess&) = delete;
  HetrecProcess& operator=(const HetrecProcess&) = delete;

  pid_t pid() const { return pid_; }

  // True once the process has exited (reaped); `status()` is then valid.
  bool poll() {
    if (reaped_) return true;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      status_ = status;
    }
    return reaped_;
  }
  int wait() {
    while (!reaped_) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, 0);
      if (r == pid_) {
        reaped_ = true;
        status_ = status;
      } else if (r < 0 && errno != EINTR) {
        throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
      }
    }
    return status_;
  }
  void kill_now() { ::kill(pid_, SIGKILL); }

  int status() const { return status_; }
  bool killed() const { return reaped_ && WIFSIGNALED(status_) && WTERMSIG(status_) == SIGKILL; }
  int exit_code() const { return reaped_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

}  // namespace hetrec::test
