#include "train/metrics_log.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/exclusive_file.h"

namespace hetrec::inline train {

MetricsLog::MetricsLog(const std::string& path) : path_(path) {
  if (path.empty()) return;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // a failure shows at fopen
  const int fd = open_for_appending(path, "train.metrics_path");
  file_ = ::fdopen(fd, "a");
  if (!file_) {
    const int err = errno;
    ::close(fd);
    throw IoError("train.metrics_path '" + path + "': cannot open for appending: " + std::strerror(err));
  }
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write_header(const nlohmann::json& record) {
  if (!file_) return;
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    throw IoError("train.metrics_path '" + path_ + "': write failed: " + std::strerror(errno));
}

void MetricsLog::write(const nlohmann::json& record) {
  write_header(record);
  if (observer_) observer_(record);
}

}  // namespace hetrec::train::train
