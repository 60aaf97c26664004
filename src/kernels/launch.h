#pragma once
// Small launch-configuration helpers shared by the kernel launchers.
#include <cstdint>

#include "core/error.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

template <class T>
HETREC_HD constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }

// Smallest power of two >= v (v >= 1).
constexpr int next_pow2(int v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

// Grid size for `work_items` items of `per_block` items each, checked against the
// hardware grid limit (2^31 - 1 blocks in x).
inline unsigned grid_for(int64_t work_items, int64_t per_block) {
  constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
  const int64_t blocks = work_items <= 0 ? 1 : ceil_div(work_items, per_block);
  if (blocks > kMaxGridX) throw InternalError("grid of " + std::to_string(blocks) + " blocks exceeds the device limit");
  return static_cast<unsigned>(blocks);
}

}  // namespace hetrec::kernels
