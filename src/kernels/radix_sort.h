#pragma once
// Stable least-significant-digit radix sort of (uint32 key, uint32 value) pairs on the
// device, 8 bits per pass, written once for CUDA and HIP (warp ballots sized by
// kWarpSize). The item count may live on the device, so a captured graph sorts batches
// of any size up to the capacity.
#include <cstddef>
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/radix_sort_geometry.h"  // radix_sort_workspace_bytes, the tiles

namespace hetrec::kernels {

struct SortBuffers {
  uint32_t* keys = nullptr;        // capacity elements: the input, and the output after an even pass count
  uint32_t* values = nullptr;
  uint32_t* keys_alt = nullptr;    // capacity elements: ping-pong partner
  uint32_t* values_alt = nullptr;
};

// Sorts the first n pairs by the low `key_bits` bits of the key (bits above are ignored),
// stably. n is *num_items when num_items is not null (a device pointer, n <= capacity),
// else capacity. Returns true when the sorted pairs are in keys/values, false when they
// are in keys_alt/values_alt.
bool radix_sort_pairs(const SortBuffers& buffers, const int32_t* num_items, int64_t capacity, int key_bits,
                      void* workspace, std::size_t workspace_bytes, gpu::stream_t stream);

}  // namespace hetrec::kernels
