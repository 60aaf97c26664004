#pragma once
// The current time in UTC as text, for the dates and stamps of results files.
#include <string>

namespace hetrec {

// strftime `format` (e.g. "%Y-%m-%dT%H:%M:%SZ", "%Y%m%d") of the current UTC time.
std::string utc_time(const char* format);

}  // namespace hetrec
