#pragma once
// Shared by the device tests: skip without a GPU, device <-> host copies of vectors,
// poisoned device buffers.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "core/tensor.h"
#include "gpu/device.h"
#include "gpu/device_buffer.h"
#include "gpu/memory.h"

#define HETREC_REQUIRE_GPU()                                          \
  do {                                                                \
    if (!::hetrec::gpu::has_device()) GTEST_SKIP() << "no GPU device"; \
  } while (0)

namespace hetrec::testing {

template <class T>
gpu::DeviceBuffer to_device(const std::vector<T>& v) {
  gpu::DeviceBuffer b(v.empty() ? sizeof(T) : v.size() * sizeof(T));
  gpu::memcpy_sync(b.get(), v.data(), v.size() * sizeof(T), gpu::CopyKind::host_to_device);
  return b;
}

template <class T>
std::vector<T> to_host(const gpu::DeviceBuffer& b, std::size_t count) {
  std::vector<T> v(count);
  gpu::memcpy_sync(v.data(), b.get(), count * sizeof(T), gpu::CopyKind::device_to_host);
  return v;
}

// A device buffer of n floats filled with NaN, so unwritten outputs show.
inline gpu::DeviceBuffer poisoned_floats(std::size_t n) {
  return to_device(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
}

}  // namespace hetrec::testing
