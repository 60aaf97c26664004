#pragma once
// When an OpenMP loop of the dense layers runs in parallel. Opening a parallel region
// costs a few microseconds (thread wake-up and barrier); a simple element-wise pass runs
// at about one element per nanosecond per core, so below ~64 K elements the region
// costs more than it saves.
#include <cstdint>

namespace hetrec::inline nn {

inline constexpr int64_t kParallelMinElements = int64_t{1} << 16;

}  // namespace hetrec::nn::nn
