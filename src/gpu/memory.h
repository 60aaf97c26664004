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

// Page-locked host memory mapped into the device's address space (zero-copy): device
// kernels read and write it over the host link through the alias mapped_device_alias
// returns. Freed with pinned_free.
void* mapped_host_malloc(std::size_t bytes);
void* mapped_device_alias(void* host_ptr);

// any: the runtime infers the direction from the pointers (unified addressing), for
// copies whose endpoints may be device memory or mapped host memory.
enum class CopyKind { host_to_device, device_to_host, device_to_device, any };

void memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, stream_t stream);
void memset_async(void* dst, int byte_value, std::size_t bytes, stream_t stream);
// Synchronous copy (tests and one-off setup only; never inside a training step).
void memcpy_sync(void* dst, const void* src, std::size_t bytes, CopyKind kind);

}  // namespace hetrec::gpu
