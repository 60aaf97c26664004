#pragma once
// Per-kernel launch attributes.
#include <cstddef>

namespace hetrec::gpu {

// Lets `kernel` (a __global__ function's address) request up to `bytes` of dynamic
// shared memory per block; above 48 KB a kernel must opt in before its launch.
void allow_dynamic_shared_memory(const void* kernel, std::size_t bytes);

}  // namespace hetrec::gpu
