#pragma once
// Metrics as JSON lines: one object per line, flushed as written, so a crashed run keeps
// everything it logged.
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace hetrec::inline train {

// Sees every record as it is written (the Python module's training callback).
using MetricsObserver = std::function<void(const nlohmann::json& record)>;

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);  // empty path: a no-op log
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  // Writes the record to the file (when there is one), then shows it to the observer.
  void write(const nlohmann::json& record);
  // The run header (train/run_header.h): to the file only; the observer sees the run's
  // own records (train, eval, checkpoint, final).
  void write_header(const nlohmann::json& record);
  void set_observer(MetricsObserver observer) { observer_ = std::move(observer); }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  MetricsObserver observer_;
};

}  // namespace hetrec::train::train
