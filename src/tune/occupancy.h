#pragma once
// Occupancy of a compiled kernel from its resource report (registers, shared memory,
// spills) and the hardware description: how many threads of it an SM keeps resident.
#include <cstddef>
#include <string>

#include "hw/hardware.h"

namespace hetrec::tune {

struct ResourceReport {
  int registers = 0;                 // per thread
  std::size_t static_shared_bytes = 0;
  std::size_t dynamic_shared_bytes = 0;  // what the launch requests per block
  std::size_t local_bytes = 0;       // per thread; > 0: spills or stack arrays
  int max_threads_per_block = 0;     // what the compiled kernel allows
};

struct Occupancy {
  int blocks_per_unit = 0;
  double fraction = 0.0;  // resident threads / max_threads_per_unit
  std::string limiter;    // "threads", "registers", "shared memory", "blocks"
};

// NVIDIA rules (CUDA C++ Programming Guide, occupancy; compute capability 9.0 tables).
// Throws ConfigError for a hardware description that is not NVIDIA's.
Occupancy occupancy(const Hardware& hw, const ResourceReport& r, int block_threads);

}  // namespace hetrec::tune
