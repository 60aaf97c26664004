#include "core/log.h"

#include "core/error.h"

namespace hetrec {

LogLevel parse_log_level(std::string_view name) {
  if (name == "debug") return LogLevel::debug;
  if (name == "info") return LogLevel::info;
  if (name == "warn") return LogLevel::warn;
  if (name == "error") return LogLevel::error;
  if (name == "quiet") return LogLevel::quiet;
  throw ConfigError("log level '" + std::string(name) +
                    "': expected one of debug, info, warn, error, quiet");
}

void Logger::write(LogLevel level, const std::string& msg) const {
  if (level < level_ || level_ == LogLevel::quiet) return;
  static constexpr const char* kTags[] = {"debug", "info", "warn", "error"};
  std::fprintf(sink_, "[hetrec %s] %s\n", kTags[static_cast<int>(level)], msg.c_str());
  std::fflush(sink_);
}

}  // namespace hetrec
