#include "train/run_header.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>
#include <sstream>

#include "core/error.h"
#include "train/config_json.h"

namespace hetrec::inline train {
namespace {

// Two spellings of one checkpoint ("out/x/ckpt-1.hck", "./out/x/ckpt-1.hck") are one.
std::string normal_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? std::filesystem::path(path).lexically_normal().string() : p.string();
}

}  // namespace

std::string new_run_id() {
  std::random_device device;
  const uint64_t now = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::mt19937_64 mix((static_cast<uint64_t>(device()) << 32) ^ device() ^ now);
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(mix()));
  return text;
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

RunHeader::RunHeader(std::string metrics_path, BuildIdentity build)
    : path_(std::move(metrics_path)), build_(std::move(build)) {
  if (path_.empty()) return;
  // Read as the writer opens it (core/exclusive_file.h): never through a link, only a
  // regular file; anything else is left for the writer to refuse with its own message.
  const int fd = ::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  struct stat st{};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char buffer[1 << 16];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  std::istringstream in(text);
  std::string run_id;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++records_;
    const nlohmann::json r = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!r.is_object()) continue;
    const std::string type = r.value("type", "");
    if (type == "run") {
      run_id = r.value("run_id", "");
      last_run_id_ = run_id;
      last_utc_ = r.value("utc", "");
    } else if (type == "checkpoint" && r.contains("path") && r["path"].is_string()) {
      checkpoints_.push_back({normal_path(r["path"].get<std::string>()), run_id});
    }
  }
}

std::string RunHeader::refusal(const std::string& why) const {
  std::string held = last_run_id_.empty() ? std::string("records of another run")
                                          : "the records of run " + last_run_id_ + " (started " + last_utc_ + ")";
  return "train.metrics_path '" + path_ + "': already holds " + held + "; " + why +
         ". Choose a new metrics file (--set train.metrics_path=<new path>) or resume that run from its "
         "checkpoint (--set train.resume=true with its train.checkpoint_dir)";
}

void RunHeader::refuse_unless_resuming(bool resume) const {
  if (records_ > 0 && !resume) throw ConfigError(refusal("a new run does not append to it"));
}

nlohmann::json RunHeader::record(const RunConfig& cfg, const std::string& resumed_from, int64_t start_step,
                                 const std::string& device, int world_size) const {
  std::string run_id;
  if (records_ > 0) {
    if (resumed_from.empty())
      throw ConfigError(refusal("this run found no checkpoint to resume from in train.checkpoint_dir '" +
                                cfg.train.checkpoint_dir + "', so it would start a new run in it"));
    const std::string wanted = normal_path(resumed_from);
    bool recorded = false;
    for (const Checkpoint& c : checkpoints_)
      if (c.path == wanted) {
        recorded = true;
        run_id = c.run_id;  // "" when the file has no header before it: a new id
      }
    if (!recorded)
      throw ConfigError(refusal("the checkpoint this run resumes from, '" + resumed_from +
                                "', is not one the file records, so it belongs to another run"));
  }
  if (run_id.empty()) run_id = new_run_id();
  nlohmann::json header = {{"type", "run"},
                           {"run_id", run_id},
                           {"utc", utc_now()},
                           {"version", build_.version},
                           {"commit", build_.commit},
                           {"device", device},
                           {"world_size", world_size},
                           {"start_step", start_step},
                           {"config", resolved_config_json(cfg)}};
  if (!resumed_from.empty()) header["resumed_from"] = resumed_from;
  return header;
}

}  // namespace hetrec::train::train
