#pragma once
// The vendor library's device radix sort behind the engine sort's interface
// (kernels/radix_sort.h): CUB's DeviceRadixSort::SortPairs (onesweep, shipped with the
// CUDA toolkit) on CUDA, rocPRIM's radix_sort_pairs on HIP. Stable, over the low
// key_bits bits only.
#include <cstddef>
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/radix_sort.h"           // SortBuffers
#include "kernels/radix_sort_geometry.h"  // library_sort_workspace_bound

namespace hetrec::kernels {

// Sorts the first n pairs by the low `key_bits` bits of the key, stably, as
// radix_sort_pairs does, and returns where the result is the same way. The libraries
// take their item count on the host, so with a device count (num_items not null) the
// sort runs over the whole capacity: keys[n, capacity) are first set to all ones, which
// ties with or sorts after every real key and, coming last in the input, stays after it,
// so the first n sorted pairs are those of the first n pairs. Past n the result holds
// that padding (the engine sort leaves those slots untouched).
bool library_sort_pairs(const SortBuffers& buffers, const int32_t* num_items, int64_t capacity, int key_bits,
                        void* workspace, std::size_t workspace_bytes, gpu::stream_t stream);

// Scratch bytes the library asks for to sort `capacity` pairs of `key_bits`-bit keys on
// the current device (a query: no work is done). At most library_sort_workspace_bound.
std::size_t library_sort_workspace_query(int64_t capacity, int key_bits);

}  // namespace hetrec::kernels
