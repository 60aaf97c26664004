#pragma once
// Metrics as JSON lines: one object per line, flushed as written, so a crashed run keeps
// everything it logged.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace hetrec {

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);  // empty path: a no-op log
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const nlohmann::json& record);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace hetrec
