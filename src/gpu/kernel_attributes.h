#pragma once
// Per-kernel launch attributes.
#include <cstddef>

namespace hetrec::gpu {

// Lets `kernel` (a __global__ function's address) request up to `bytes` of dynamic
// shared memory per block; above 48 KB a kernel must opt in before its launch.
void allow_dynamic_shared_memory(const void* kernel, std::size_t bytes);

// How many blocks of `threads` threads (and `dynamic_shared_bytes` of dynamic shared
// memory) of `kernel` one multiprocessor holds at once, from its register and shared
// memory use: what a persistent grid should launch per multiprocessor.
int resident_blocks_per_multiprocessor(const void* kernel, int threads, std::size_t dynamic_shared_bytes);

// Lets `kernel` launch in clusters above the portable size (8 CTAs); false where the
// device refuses (or has no thread-block clusters: HIP).
bool allow_non_portable_clusters(const void* kernel);

// How many clusters of `cluster_size` blocks of `kernel` (`threads` threads and
// `dynamic_shared_bytes` each) the device holds at once (cudaOccupancyMaxActiveClusters: a
// cluster's blocks share one GPC). 0 under HIP, which has no clusters.
int max_active_clusters(const void* kernel, int threads, std::size_t dynamic_shared_bytes, int cluster_size);

}  // namespace hetrec::gpu
