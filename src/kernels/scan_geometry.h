#pragma once
// The geometry of the device exclusive scan (kernels/scan.cu): its tiles, the scratch it
// needs and the kernels one scan launches. Plain C++ (constexpr), for the launcher and
// for the planner (plan/memory_model.cpp, plan/step_model.cpp).
#include <cstddef>
#include <cstdint>

#include "kernels/workspace_geometry.h"

namespace hetrec::kernels {

inline constexpr int kScanThreads = 256;
inline constexpr int kScanItemsPerThread = 8;
// Elements one block scans.
inline constexpr int64_t kScanTile = int64_t{kScanThreads} * kScanItemsPerThread;

// Bytes of scratch exclusive_scan needs for n elements: the tile totals of n, then,
// recursively, those of the tile totals' own scan.
constexpr std::size_t exclusive_scan_workspace_bytes(int64_t n) {
  if (n <= kScanTile) return 0;
  const int64_t tiles = blocks_of(n, kScanTile);
  return workspace_aligned(static_cast<std::size_t>(tiles) * sizeof(uint32_t)) + exclusive_scan_workspace_bytes(tiles);
}

// Kernels one exclusive_scan of n >= 1 elements launches: one tile scan when n fits a tile;
// otherwise the tile sums, the scan of the sums and the tile scan.
constexpr int exclusive_scan_launches(int64_t n) {
  if (n <= kScanTile) return 1;
  return 2 + exclusive_scan_launches(blocks_of(n, kScanTile));
}

}  // namespace hetrec::kernels
