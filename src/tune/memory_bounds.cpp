#include "tune/memory_bounds.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace hetrec::tune {

namespace {
// TB/s and TFLOP/s to per-microsecond rates.
constexpr double kPerUsPerTera = 1e6;
}  // namespace

double hbm_bytes_per_us(const Hardware& hw) {
  if (hw.hbm_tbs <= 0) throw ConfigError("hardware '" + hw.name + "': memory.hbm_tbs is needed for the floor");
  return hw.hbm_tbs * kPerUsPerTera;
}

double hbm_floor_us(const Hardware& hw, double bytes) { return bytes / hbm_bytes_per_us(hw); }

double hbm_or_fp32_floor_us(const Hardware& hw, double bytes, double fp32_flops) {
  if (hw.dense_tflops.fp32 <= 0)
    throw ConfigError("hardware '" + hw.name + "': dense_tflops.fp32 is needed for the floor");
  return std::max(hbm_floor_us(hw, bytes), fp32_flops / (hw.dense_tflops.fp32 * kPerUsPerTera));
}

double sustained_bytes_per_us(const Hardware& hw, double threads, double bytes_in_flight) {
  return std::min(hbm_bytes_per_us(hw), threads * bytes_in_flight / kAssumedMemoryLatencyUs);
}

}  // namespace hetrec::tune
