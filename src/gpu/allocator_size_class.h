#pragma once
// How gpu::CachingDeviceAllocator rounds a request to the size class it serves it from.
// Plain C++ (constexpr, no device code), for the allocator and for the planner's memory
// model (plan/device_memory.h), so both round with this one function.
#include <bit>
#include <cstddef>

namespace hetrec::gpu {

// 512 B: cudaMalloc aligns to 256 B; a 512 B quantum keeps every block 16-byte-vector
// aligned with room for tails, and small buffers (counters, flags) share few classes.
inline constexpr std::size_t kAllocatorSmallQuantum = 512;
inline constexpr std::size_t kAllocatorSmallLimit = std::size_t{1} << 20;  // 1 MiB
inline constexpr int kAllocatorClassesPerOctave = 4;
// Above this, blocks are model-sized (embedding tables, optimizer state): rounding them
// by a quarter octave could waste tens of GB, so they round to the driver's 2 MiB pages.
inline constexpr std::size_t kAllocatorLargeLimit = std::size_t{256} << 20;
inline constexpr std::size_t kAllocatorLargeQuantum = std::size_t{2} << 20;

// Multiples of 512 B up to 1 MiB, four classes per power of two up to 256 MiB, multiples
// of 2 MiB above.
constexpr std::size_t allocator_size_class(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes <= kAllocatorSmallLimit)
    return (bytes + kAllocatorSmallQuantum - 1) / kAllocatorSmallQuantum * kAllocatorSmallQuantum;
  if (bytes > kAllocatorLargeLimit)
    return (bytes + kAllocatorLargeQuantum - 1) / kAllocatorLargeQuantum * kAllocatorLargeQuantum;
  const int octave = std::bit_width(bytes - 1) - 1;  // 2^octave < bytes <= 2^(octave+1)
  const std::size_t step = (std::size_t{1} << octave) / kAllocatorClassesPerOctave;
  return (bytes + step - 1) / step * step;
}

}  // namespace hetrec::gpu
