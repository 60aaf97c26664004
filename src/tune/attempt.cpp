#include "tune/attempt.h"

#include <chrono>
#include <ctime>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/exclusive_file.h"

namespace hetrec::tune {

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pruned: return "pruned";
    case Verdict::compile_error: return "compile_error";
    case Verdict::resources: return "resources";
    case Verdict::launch_error: return "launch_error";
    case Verdict::wrong: return "wrong";
    case Verdict::passed: return "passed";
  }
  return "unknown";
}

nlohmann::json to_json(const Attempt& a) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  nlohmann::json j = {{"time", stamp},
                      {"kernel", a.kernel},
                      {"shape", a.shape},
                      {"origin", a.origin},
                      {"params", to_json(a.params)},
                      {"verdict", verdict_name(a.verdict)},
                      {"reason", a.reason},
                      {"compiled", a.compiled},
                      {"predicted_us", a.predicted_us},
                      {"source_hash", a.source_hash}};
  if (a.compiled) {
    j["registers"] = a.resources.registers;
    j["static_shared_bytes"] = a.resources.static_shared_bytes;
    j["dynamic_shared_bytes"] = a.resources.dynamic_shared_bytes;
    j["local_bytes"] = a.resources.local_bytes;
    j["occupancy"] = a.occupancy;
  }
  if (a.verdict == Verdict::wrong || a.verdict == Verdict::passed) j["max_abs_error"] = a.max_abs_error;
  if (a.verdict == Verdict::passed) j["time_us"] = a.time_us;
  return j;
}

AttemptLog::AttemptLog(std::string path) : path_(std::move(path)) {
  ::close(open_for_appending(path_, "tune: the attempt log"));
}

void AttemptLog::append(const Attempt& a) {
  const std::string line = to_json(a).dump() + "\n";
  const int fd = open_for_appending(path_, "tune: the attempt log");
  const ssize_t n = ::write(fd, line.data(), line.size());  // one append of one line
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size()))
    throw IoError("tune: cannot append to the attempt log " + path_ + ": " + (n < 0 ? std::strerror(err) : "short write"));
}

}  // namespace hetrec::tune
