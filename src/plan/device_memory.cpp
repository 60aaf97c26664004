#include "plan/device_memory.h"

#include <bit>

namespace hetrec {
namespace {

// The constants of gpu/caching_allocator.cpp.
constexpr std::size_t kSmallQuantum = 512;
constexpr std::size_t kSmallLimit = std::size_t{1} << 20;
constexpr int kClassesPerOctave = 4;
constexpr std::size_t kLargeLimit = std::size_t{256} << 20;
constexpr std::size_t kLargeQuantum = std::size_t{2} << 20;

}  // namespace

double usable_device_bytes(const Hardware& hw) { return hw.hbm_gb * kHbmUnitBytes - kDriverReservedBytes; }

std::size_t caching_allocator_size_class(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes <= kSmallLimit) return (bytes + kSmallQuantum - 1) / kSmallQuantum * kSmallQuantum;
  if (bytes > kLargeLimit) return (bytes + kLargeQuantum - 1) / kLargeQuantum * kLargeQuantum;
  const int octave = std::bit_width(bytes - 1) - 1;
  const std::size_t step = (std::size_t{1} << octave) / kClassesPerOctave;
  return (bytes + step - 1) / step * step;
}

}  // namespace hetrec
