#pragma once
// The geometry of the device radix sort (kernels/radix_sort.cu): its digits, its tiles,
// the scratch it needs and the kernels one sort launches. Plain C++ (constexpr), for the
// launcher and for the planner (plan/memory_model.cpp, plan/step_model.cpp).
#include <cstddef>
#include <cstdint>

#include "kernels/scan_geometry.h"
#include "kernels/workspace_geometry.h"

namespace hetrec::kernels {

inline constexpr int kSortDigitBits = 8;
inline constexpr int kSortDigits = 1 << kSortDigitBits;
// One thread per digit in the per-digit steps (the scan over warps and digits, the
// histogram's sum over warps), so a block has kSortDigits threads.
inline constexpr int kSortThreads = kSortDigits;
// Pairs per thread: tiles of 4096 pairs, so uniform digits have runs of 16 pairs (64 bytes)
// per tile. Measured on the H200 (28 M pairs, 32-bit keys): 1.23 ms a sort, against
// 1.82 ms with 8 pairs per thread (4 blocks per SM) and 2.0 ms with 12 (2 blocks).
inline constexpr int kSortItemsPerThread = 16;
inline constexpr int kSortTile = kSortThreads * kSortItemsPerThread;

// Bytes one pass moves per pair of 32-bit keys and values: the histogram reads the key,
// the scatter reads and writes key and value (kernels/radix_sort.cu).
inline constexpr std::size_t kSortPassBytesPerPair = sizeof(uint32_t) + 2 * (sizeof(uint32_t) + sizeof(uint32_t));

// Tiles of a sort of `capacity` pairs (at least one) and the digit counts they make: one
// per (digit, tile), scanned digit-major.
constexpr int64_t radix_sort_tiles(int64_t capacity) { return blocks_of(capacity > 0 ? capacity : 1, kSortTile); }
constexpr int64_t radix_sort_counts(int64_t capacity) { return radix_sort_tiles(capacity) * kSortDigits; }

// Bytes of scratch radix_sort_pairs needs for `capacity` pairs: the counts and their scan's.
constexpr std::size_t radix_sort_workspace_bytes(int64_t capacity) {
  const int64_t counts = radix_sort_counts(capacity);
  return workspace_aligned(static_cast<std::size_t>(counts) * sizeof(uint32_t)) +
         exclusive_scan_workspace_bytes(counts);
}

// Bytes of scratch the library sort (kernels/library_sort.h) may ask for, for `capacity`
// pairs of keys of up to 32 bits, as CUB's onesweep lays it out
// (cub/device/dispatch/dispatch_radix_sort.cuh): per portion of up to 2^28 pairs and per
// pass (8-bit digits, at most 4 passes) a histogram of 256 counters, and the look-back
// counters of the largest portion, 256 per tile; each part on its own 256-byte boundary.
// Its tiles of 32-bit keys and values hold 384 x 21 pairs on the A100 (Policy800) and
// 384 x 23 from the H100 on (Policy900); the bound assumes tiles of kLibrarySortMinTile
// pairs, the engine sort's, about half those. The library's own query is checked against
// it before every sort (kernels/library_sort.cu), and by a GPU test over many capacities.
inline constexpr int64_t kLibrarySortMinTile = 4096;
inline constexpr int64_t kLibrarySortPortion = (int64_t{1} << 28) - kLibrarySortMinTile;
inline constexpr int kLibrarySortMaxPasses = 4;
constexpr std::size_t library_sort_workspace_bound(int64_t capacity) {
  const int64_t n = capacity > 0 ? capacity : 1;
  const int64_t portions = blocks_of(n, kLibrarySortPortion);
  const int64_t largest = n < kLibrarySortPortion ? n : kLibrarySortPortion;
  const auto counters = [](int64_t c) { return static_cast<std::size_t>(c) * sizeof(uint32_t) + 256; };
  return counters(portions * kLibrarySortMaxPasses * kSortDigits) +          // histograms
         counters(blocks_of(largest, kLibrarySortMinTile) * kSortDigits) +  // look-back
         counters(portions * kLibrarySortMaxPasses) + 512;                  // pass counters, alignment
}

// Scratch that serves either sort (kernels/sort_pairs.h).
constexpr std::size_t sort_workspace_bytes(int64_t capacity) {
  const std::size_t engine = radix_sort_workspace_bytes(capacity);
  const std::size_t library = library_sort_workspace_bound(capacity);
  return engine > library ? engine : library;
}

// Digit passes over keys of `key_bits` bits.
constexpr int radix_sort_passes(int key_bits) { return static_cast<int>(blocks_of(key_bits, kSortDigitBits)); }

// Kernels one sort launches: per pass a histogram, the scan of the counts and a scatter.
constexpr int radix_sort_launches(int64_t capacity, int key_bits) {
  return radix_sort_passes(key_bits) * (2 + exclusive_scan_launches(radix_sort_counts(capacity)));
}

}  // namespace hetrec::kernels
