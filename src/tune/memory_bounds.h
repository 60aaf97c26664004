#pragma once
// The bounds every tuned kernel's model shares: its floor (bytes at the HBM rate, and for
// kernels that compute, FLOPs at the fp32 rate), the bandwidth its loads in flight can
// sustain (Little's law) and the memory-issue constants. Each model supplies its own
// bytes, FLOPs and loads in flight.
#include "hw/hardware.h"

namespace hetrec::tune {

// Loaded HBM latency. An assumption (order of magnitude of a global load under load on
// current HBM GPUs), not a measurement: it only orders candidates, the timing decides.
inline constexpr double kAssumedMemoryLatencyUs = 1.0;
// Load/store units per SM: Hopper whitepaper (4 partitions x 8 LD/ST units per SM), so
// one warp-wide memory instruction (32 lanes) issues per SM per clock.
inline constexpr double kLoadLanesPerUnitPerClock = 32;
// A DRAM sector: the unit in which NVIDIA GPUs move global memory (CUDA C++ Best
// Practices Guide, "Coalesced Access to Global Memory": 32-byte segments).
inline constexpr int kSectorBytes = 32;

// The hardware description's HBM rate in bytes per microsecond; ConfigError naming
// memory.hbm_tbs when the description has none.
double hbm_bytes_per_us(const Hardware& hw);

// `bytes` at the HBM rate, in microseconds.
double hbm_floor_us(const Hardware& hw, double bytes);
// The larger of `bytes` at the HBM rate and `fp32_flops` at the fp32 rate (ConfigError
// naming dense_tflops.fp32 when the description has none), in microseconds.
double hbm_or_fp32_floor_us(const Hardware& hw, double bytes, double fp32_flops);

// Bytes per microsecond that `threads` threads, each with `bytes_in_flight` outstanding,
// sustain over kAssumedMemoryLatencyUs; at most the HBM rate.
double sustained_bytes_per_us(const Hardware& hw, double threads, double bytes_in_flight);

}  // namespace hetrec::tune
