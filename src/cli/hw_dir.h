#pragma once
// Where the commands find the hardware descriptions: the repository's hw/ folder, or
// HETREC_HW_DIR when set (each command also takes --hw-dir).
#include <cstdlib>
#include <string>

namespace hetrec::cli {

inline std::string default_hw_dir() {
  if (const char* env = std::getenv("HETREC_HW_DIR")) return env;
  return std::string(HETREC_SOURCE_DIR) + "/hw";
}

}  // namespace hetrec::cli
