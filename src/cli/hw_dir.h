#pragma once
// Where the commands find the hardware descriptions: the repository's hw/ folder, or
// HETREC_HW_DIR when set (each command also takes --hw-dir).
#include <string>

#include "hw/hardware.h"

namespace hetrec::cli {

inline std::string default_hw_dir() { return default_hardware_dir(); }

}  // namespace hetrec::cli
