#pragma once
// Minimal levelled logging to stderr. The level is a value held by the caller's
// Logger; there is no global logger.
#include <cstdio>
#include <string>
#include <string_view>

namespace hetrec {

enum class LogLevel { debug = 0, info = 1, warn = 2, error = 3, quiet = 4 };

LogLevel parse_log_level(std::string_view name);  // throws ConfigError on unknown names

class Logger {
 public:
  explicit Logger(LogLevel level = LogLevel::info, std::FILE* sink = stderr)
      : level_(level), sink_(sink) {}
  LogLevel level() const { return level_; }
  void debug(const std::string& msg) const { write(LogLevel::debug, msg); }
  void info(const std::string& msg) const { write(LogLevel::info, msg); }
  void warn(const std::string& msg) const { write(LogLevel::warn, msg); }
  void error(const std::string& msg) const { write(LogLevel::error, msg); }

 private:
  void write(LogLevel level, const std::string& msg) const;
  LogLevel level_;
  std::FILE* sink_;
};

}  // namespace hetrec
