#include "core/utc_time.h"

#include <ctime>

namespace hetrec {

std::string utc_time(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);  // the thread-safe form: tuning compiles on a second thread
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof buf, format, &tm);
  return std::string(buf, n);
}

}  // namespace hetrec
