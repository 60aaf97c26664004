#pragma once
// Raw device and pinned-host memory, and asynchronous copies. Allocation failures throw
// OutOfMemoryError saying how much was requested and how much the device had free.
#include <cstddef>

#include "gpu/platform.h"

namespace hetrec::gpu {

void* device_malloc(std::size_t bytes);
void device_free(void* ptr) noexcept;  // errors at free time are reported to stderr only

// Page-locked host memory: the source and target of truly asynchronous copies.
void* pinned_malloc(std::size_t bytes);
void pinned_free(void* ptr) noexcept;

enum class CopyKind { host_to_device, device_to_host, device_to_device };

void memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, stream_t stream);
void memset_async(void* dst, int byte_value, std::size_t bytes, stream_t stream);
// Synchronous copy (tests and one-off setup only; never inside a training step).
void memcpy_sync(void* dst, const void* src, std::size_t bytes, CopyKind kind);

}  // namespace hetrec::gpu
